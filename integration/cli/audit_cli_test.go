package cli

import (
	"os/exec"

	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditFromTheCLI answers a reviewer's questions with the binary alone:
// what did the intent change, line by line, which process did it, is the
// log intact, and can it all be taken back?
func TestAuditFromTheCLI(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	testenv.WriteFile(t, filepath.Join(repo, "src/app.go"), "package app\n\nfunc A() int { return 1 }\n")
	before := testenv.TreeBytes(t, repo)
	// No CLAUDE.md section: the test compares the whole source tree.
	c.Must("mount", repo, ws, "--intent", "INT-001", "--agent-files", "none")
	neutral := t.TempDir()
	t.Cleanup(func() { c.Dir = neutral; c.Run("unmount", ws); testenv.DetachMount(ws) })
	sh := exec.Command("sh", "-c", "sed -i 's/return 1/return 2/' src/app.go && echo 'package app' > src/b.go && rm src/app.go && echo back > src/app.go")
	sh.Dir = ws
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	c.Dir = ws
	testenv.WaitFor(t, func() bool {
		return strings.Contains(c.Must("log", "--path", "src/app.go", "--event", "create"), "src/app.go")
	})

	if out := c.Must("verify"); !strings.Contains(out, "OK:") || !strings.Contains(out, "hash chain intact") {
		t.Fatalf("verify:\n%s", out)
	}
	diff := c.Must("diff", "--intent", "INT-001")
	for _, want := range []string{"+++ b/src/b.go", "+package app", "--- a/src/app.go", "-func A() int { return 1 }", "+back"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	if out := c.Must("blame", "src/b.go"); !strings.Contains(out, "INT-001") || !strings.Contains(out, "sh[") || !strings.Contains(out, "| package app") {
		t.Errorf("blame:\n%s", out)
	}
	var plan struct {
		Plan struct {
			Steps []struct{ Action, Path string }
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(c.Must("revert", "--intent", "INT-001", "--dry-run", "--json")), &plan); err != nil || len(plan.Plan.Steps) < 4 {
		t.Fatalf("dry run plan: %v %+v", err, plan)
	}
	out := c.Must("revert", "--intent", "INT-001")
	if !strings.Contains(out, "reverted:") {
		t.Fatalf("revert:\n%s", out)
	}
	c.Dir = t.TempDir()
	c.Must("unmount", ws)
	if after := testenv.TreeBytes(t, repo); !testenv.EqualTrees(before, after) {
		t.Fatalf("after revert:\n%v\nwant\n%v", after, before)
	}
	if out := c.Must("verify", "--source", repo); !strings.Contains(out, "OK:") {
		t.Fatalf("verify after revert:\n%s", out)
	}
	// Editing the ledger is caught, and named.
	led := filepath.Join(repo, ".orchestration/agent_trace.jsonl")
	b, _ := os.ReadFile(led)
	lines := strings.Split(string(b), "\n")
	lines[2] = strings.Replace(lines[2], "INT-001", "INT-002", 1)
	os.WriteFile(led, []byte(strings.Join(lines, "\n")), 0o644)
	out, code := c.Run("verify", "--source", repo)
	if code != 1 || !strings.Contains(out, "agent_trace.jsonl:4: prev does not match") {
		t.Fatalf("tampered verify: exit %d\n%s", code, out)
	}
	if out := c.Must("gc", "--source", repo, "--older-than", "0s", "--dry-run"); !strings.Contains(out, "would remove") {
		t.Fatalf("gc:\n%s", out)
	}
}
