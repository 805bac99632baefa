package observe

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// observePolicy observes the workspace: INT-001 inherits observe and holds
// deletions in src/keep/ for approval; INT-002 enforces its own scope.
const observePolicy = `# a team adopting intentfs: watch first
enforcement: observe
active_intents:
  - id: INT-001
    name: observed work
    status: IN_PROGRESS
    owned_scope: ["src/**"]
    approvals:
      - name: keep-deletes
        ops: [delete]
        paths: ["src/keep/**"]
        timeout: 2m
  - id: INT-002
    name: enforced work
    status: IN_PROGRESS
    enforcement: enforce
    owned_scope: ["src/**"]
`

// mountObserved mounts observePolicy with INT-001 selected, the source
// owned by the agent (uid 1000), who can reach the mount.
func mountObserved(t *testing.T) *testenv.Env {
	t.Helper()
	e := testenv.MountPrepared(t, observePolicy, "INT-001",
		map[string]string{"src/a.go": "package a\n", "src/keep/k.txt": "keep\n", "docs/old.md": "old\n", ".intentignore": "build/\n"},
		func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	return e
}

// TestObserveModeAllowsAndRecordsWouldDeny: under enforcement: observe an
// out-of-scope write by the agent is made and recorded with the refusal
// it would have had; status counts it and log --would-deny lists it.
func TestObserveModeAllowsAndRecordsWouldDeny(t *testing.T) {
	testenv.Serial(t)
	e := mountObserved(t)
	if out, err := e.AsAgent1000("echo new > docs/new.md && echo more >> docs/old.md"); err != nil {
		t.Fatalf("an out-of-scope write in observe mode was refused: %v\n%s", err, out)
	}
	if got, ok := e.SrcContent("docs/new.md"); !ok || got != "new\n" {
		t.Fatalf("the source has docs/new.md = %q (%v), want the write", got, ok)
	}
	rec := e.WaitRecord("the would-deny create of docs/new.md", testenv.Event(ledger.EventCreate, "docs/new.md"))
	g := rec.Gov()
	if g.ScopeValidation != "FAIL" || g.Code != string(policy.CodeOutOfScope) || !strings.Contains(g.Reason, "outside the owned_scope of INT-001") {
		t.Fatalf("the record of an observed out-of-scope write: validation %q code %q reason %q", g.ScopeValidation, g.Code, g.Reason)
	}
	e.WaitRecord("the would-deny write of docs/old.md", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventWrite && r.Path() == "docs/old.md" && r.Gov().ScopeValidation == "FAIL"
	})
	// The dry run that agents' hooks ask before a write answers as the
	// mount does, or a hook would refuse what observe mode lets through.
	if res, err := e.D.DryRun("docs/other.md", "", nil); err != nil || !res.Allowed || res.Code != string(policy.CodeOutOfScope) {
		t.Fatalf("check in observe mode: %+v %v, want allowed with code OUT_OF_SCOPE", res, err)
	}
	// An in-scope write is an ordinary PASS.
	if out, err := e.AsAgent1000("echo b > src/b.go"); err != nil {
		t.Fatalf("in-scope write: %v\n%s", err, out)
	}
	inScope := e.WaitRecord("the in-scope create", testenv.Event(ledger.EventCreate, "src/b.go"))
	if inScope.Gov().ScopeValidation != "PASS" || inScope.Gov().Code != "" {
		t.Fatalf("an in-scope change in observe mode: validation %q code %q", inScope.Gov().ScopeValidation, inScope.Gov().Code)
	}

	out, err := e.CLI("status", "--mount", e.Mnt, "--json")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	var st control.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Counters.WouldDeny != 2 || st.Enforcement != "observe" || st.Counters.Denied != 0 {
		t.Fatalf("status: would_deny %d enforcement %q denied %d, want 2, observe, 0", st.Counters.WouldDeny, st.Enforcement, st.Counters.Denied)
	}
	if out, err := e.CLI("status", "--mount", e.Mnt); err != nil || !strings.Contains(out, "2 would-deny") {
		t.Fatalf("status text lacks the would-deny count: %v\n%s", err, out)
	}
	out, err = e.CLI("log", "--source", e.Src, "--would-deny", "--json")
	if err != nil {
		t.Fatalf("log --would-deny: %v\n%s", err, out)
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r ledger.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log --would-deny --json: %v: %q", err, line)
		}
		paths = append(paths, r.Path())
	}
	slices.Sort(paths) // in the order their handles were released
	if strings.Join(paths, " ") != "docs/new.md docs/old.md" {
		t.Fatalf("log --would-deny lists %q, want only docs/new.md and docs/old.md", paths)
	}
	if out, err := e.CLI("log", "--source", e.Src, "--would-deny"); err != nil || !strings.Contains(out, "WOULD DENY OUT_OF_SCOPE") {
		t.Fatalf("log --would-deny table: %v\n%s", err, out)
	}
}

// TestObserveModeKeepsGovernanceEnforced: the policy, the ignore files and
// git's hooks stay refused in observe mode, and an intent that sets
// enforcement: enforce under an observing workspace still refuses.
func TestObserveModeKeepsGovernanceEnforced(t *testing.T) {
	testenv.Serial(t)
	e := mountObserved(t)
	policyBefore, _ := e.SrcContent(policy.IntentsFile)
	for _, script := range []string{
		"echo 'enforcement: observe' >> .orchestration/active_intents.yaml",
		"echo '**' >> .intentignore",
		"mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit",
	} {
		// On the cached data path an append is refused at write(2),
		// which the shell's built-in echo reports as "I/O error"
		// whatever the errno; the files are compared below either way.
		out, err := e.AsAgent1000(script)
		refused := strings.Contains(out, "Permission denied") || testenv.TestDataPath() == "cached" && strings.Contains(out, "I/O error")
		if err == nil || !refused {
			t.Errorf("%s: want Permission denied in observe mode, got %v\n%s", script, err, out)
		}
	}
	if after, _ := e.SrcContent(policy.IntentsFile); after != policyBefore {
		t.Fatal("the policy changed through the mount in observe mode")
	}
	if got, _ := e.SrcContent(".intentignore"); got != "build/\n" {
		t.Fatalf(".intentignore changed in observe mode: %q", got)
	}
	e.WaitRecord("the denial of the policy write", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventDenied && r.Path() == policy.IntentsFile && r.Gov().Code == string(policy.CodeProtected)
	})

	if out, err := e.CLI("select", "--mount", e.Mnt, "INT-002"); err != nil {
		t.Fatalf("select INT-002: %v\n%s", err, out)
	}
	if out, err := e.AsAgent1000("echo x > docs/enforced.md"); err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("an intent with enforcement: enforce let an out-of-scope write through: %v\n%s", err, out)
	}
	if _, ok := e.SrcContent("docs/enforced.md"); ok {
		t.Fatal("the enforced intent's refused write reached the source")
	}
}

// TestObserveModeReportsApprovalsWithoutHolding: a deletion an approval
// rule would hold completes at once in observe mode, and the ledger says
// which rule would have held it.
func TestObserveModeReportsApprovalsWithoutHolding(t *testing.T) {
	testenv.Serial(t)
	e := mountObserved(t)
	if out, err := e.AsAgent1000("timeout 20 rm src/keep/k.txt"); err != nil {
		t.Fatalf("rm under an observed approval rule: %v\n%s", err, out)
	}
	if _, ok := e.SrcContent("src/keep/k.txt"); ok {
		t.Fatal("the rm did not happen")
	}
	if pending, _ := e.D.Approvals(); len(pending) != 0 {
		t.Fatalf("observe mode held the change: %+v", pending)
	}
	rep := e.WaitRecord("the would-hold report", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventApproval && r.Gov().Code == "WOULD_HOLD" && r.Path() == "src/keep/k.txt"
	})
	if !strings.Contains(rep.Gov().Reason, "keep-deletes") {
		t.Fatalf("the report does not name the rule: %q", rep.Gov().Reason)
	}
	e.WaitRecord("the deletion", testenv.Event(ledger.EventDelete, "src/keep/k.txt"))
	if st := e.D.Status(); st.Counters.WouldHold != 1 {
		t.Fatalf("status counts %d would-hold, want 1", st.Counters.WouldHold)
	}
}

// TestPolicySuggestCoversASessionsWrites: after an observed session, policy
// suggest proposes globs that cover what it wrote outside the scope, and
// --write makes the same writes allowed once the workspace enforces.
func TestPolicySuggestCoversASessionsWrites(t *testing.T) {
	testenv.Serial(t)
	e := mountObserved(t)
	session := "mkdir -p docs/guide tools && echo 1 > docs/guide/a.md && echo 2 > docs/guide/b.md && echo 3 > tools/gen.sh"
	if out, err := e.AsAgent1000(session); err != nil {
		t.Fatalf("the observed session: %v\n%s", err, out)
	}
	e.WaitRecord("the last write", testenv.Event(ledger.EventCreate, "tools/gen.sh"))

	out, err := e.CLI("policy", "suggest", "--mount", e.Mnt, "--intent", "INT-001", "--json")
	if err != nil {
		t.Fatalf("policy suggest: %v\n%s", err, out)
	}
	var s struct {
		Add     []string `json:"add"`
		Outside []string `json:"outside"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Join(s.Add, " ") != "docs/guide/*.md tools/gen.sh" {
		t.Fatalf("proposed %q for %q", s.Add, s.Outside)
	}
	if out, err := e.CLI("policy", "suggest", "--mount", e.Mnt, "--intent", "INT-001"); err != nil ||
		!strings.Contains(out, `"docs/guide/*.md" # proposed`) || !strings.Contains(out, `"src/**"`) {
		t.Fatalf("policy suggest as YAML: %v\n%s", err, out)
	}

	// Undo the session in the source, switch the workspace to enforce,
	// and write the proposal back.
	for _, p := range []string{"docs/guide", "tools"} {
		if err := os.RemoveAll(filepath.Join(e.Src, p)); err != nil {
			t.Fatal(err)
		}
	}
	polPath := filepath.Join(e.Src, policy.IntentsFile)
	if err := os.Chown(polPath, testenv.AgentUID, testenv.AgentGID); err != nil {
		t.Fatal(err)
	}
	pol, _ := os.ReadFile(polPath)
	if err := os.WriteFile(polPath, []byte(strings.Replace(string(pol), "enforcement: observe", "enforcement: enforce", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, func() bool { return e.D.Status().Enforcement == "enforce" }, "the policy to switch to enforce")
	if out, err := e.AsAgent1000("mkdir -p docs/guide"); err == nil {
		t.Fatalf("before the suggested scope, enforce mode allowed the session's writes:\n%s", out)
	}
	if out, err := e.CLI("policy", "suggest", "--mount", e.Mnt, "--intent", "INT-001", "--write"); err != nil || !strings.Contains(out, "added 2 glob(s)") {
		t.Fatalf("policy suggest --write: %v\n%s", err, out)
	}
	st, err := os.Stat(polPath)
	if err != nil {
		t.Fatal(err)
	}
	if owner := fileOwner(st); owner != testenv.AgentUID || st.Mode().Perm() != 0o644 {
		t.Fatalf("--write left the policy owned by %d with mode %v, want %d and 0644", owner, st.Mode().Perm(), testenv.AgentUID)
	}
	if b, _ := os.ReadFile(polPath); !strings.Contains(string(b), "# a team adopting intentfs: watch first") {
		t.Fatal("--write dropped the policy's comment")
	}
	testenv.WaitFor(t, func() bool {
		in := e.D.Snapshot().Intents.Get("INT-001")
		return in != nil && in.InScope("tools/gen.sh")
	}, "the suggested scope to be in force")
	if out, err := e.AsAgent1000(session); err != nil {
		t.Fatalf("the same session under the suggested scope, enforced: %v\n%s", err, out)
	}
	if st := e.D.Status(); st.Counters.Denied != 1 {
		t.Fatalf("status counts %d denials, want only the one before --write", st.Counters.Denied)
	}
}

// fileOwner is the uid that owns the file st describes.
func fileOwner(st os.FileInfo) int { return int(st.Sys().(*syscall.Stat_t).Uid) }
