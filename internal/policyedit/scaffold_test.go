package policyedit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/policy"
)

func TestScaffoldWritesValidPolicyAndRefusesOverwrite(t *testing.T) {
	dir := t.TempDir()
	written, err := Scaffold(dir)
	if err != nil || len(written) != 2 {
		t.Fatalf("Scaffold = %v, %v", written, err)
	}
	in, warns, err := policy.LoadIntents(filepath.Join(dir, policy.IntentsFile))
	if err != nil || len(warns) != 0 {
		t.Fatalf("example policy: %v %v", err, warns)
	}
	if got := in.Get("INT-001"); got == nil || got.Status != policy.StatusPending {
		t.Fatalf("example intent = %+v", got)
	}
	if _, _, err := policy.LoadIgnore(dir); err != nil {
		t.Fatalf("example ignore: %v", err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, policy.IntentsFile))
	if _, err := Scaffold(dir); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second Scaffold err = %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, policy.IntentsFile))
	if string(before) != string(after) {
		t.Fatal("second Scaffold changed the policy")
	}
}

// TestScaffoldMissingKeepsACommittedPolicy: a clone with its policy
// committed gets what is missing; the policy is kept byte for byte.
func TestScaffoldMissingKeepsACommittedPolicy(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, policy.IntentsFile)
	if err := os.MkdirAll(filepath.Dir(pol), 0o755); err != nil {
		t.Fatal(err)
	}
	const committed = "active_intents: []\n"
	if err := os.WriteFile(pol, []byte(committed), 0o644); err != nil {
		t.Fatal(err)
	}
	written, kept, err := ScaffoldMissing(dir)
	if err != nil || len(written) != 1 || !strings.HasSuffix(written[0], ".intentignore") || len(kept) != 1 || kept[0] != pol {
		t.Fatalf("ScaffoldMissing = %v, %v, %v", written, kept, err)
	}
	if b, _ := os.ReadFile(pol); string(b) != committed {
		t.Errorf("the committed policy changed: %q", b)
	}
	written, kept, err = ScaffoldMissing(dir)
	if err != nil || len(written) != 0 || len(kept) != 2 {
		t.Errorf("second ScaffoldMissing = %v, %v, %v", written, kept, err)
	}
}
