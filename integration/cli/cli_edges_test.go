package cli

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/policy"
)

// TestLogDiffAndRevertAsANewUserMeetsThem: log filters that match nothing
// say so and bad ones are refused; diff has --json; a sed -i is one step
// of a revert plan, and reverting an intent twice does nothing the second
// time, mounted or not.
func TestLogDiffAndRevertAsANewUserMeetsThem(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	if out := c.Must("log", "--source", repo); !strings.Contains(out, "the ledger has no records yet") {
		t.Fatalf("log of an empty ledger:\n%s", out)
	}
	testenv.WriteFile(t, filepath.Join(repo, "src/a.txt"), "one\n")
	c.MountCLI(repo, ws, "--intent", "INT-001")
	sh := exec.Command("sh", "-c", "sed -i s/one/two/ src/a.txt && echo new > src/b.txt")
	sh.Dir = ws
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	testenv.WaitFor(t, func() bool {
		return strings.Contains(c.Must("log", "--source", repo, "--path", "src/b.txt"), "src/b.txt")
	})

	for _, tt := range []struct {
		args     []string
		wantCode int
		want     string
	}{
		{[]string{"--intent", "INT-999"}, 0, "no records match"},
		{[]string{"--path", "docs/**"}, 0, "no records match"},
		{[]string{"--event", "bogus"}, 2, `unknown event "bogus"`},
		{[]string{"--event", "write,bogus"}, 2, `unknown event "bogus"`},
		{[]string{"--path", "src/["}, 2, `the path glob "src/[" does not parse`},
	} {
		out, code := c.Run(append([]string{"log", "--source", repo}, tt.args...)...)
		if code != tt.wantCode || !strings.Contains(out, tt.want) {
			t.Errorf("log %v: exit %d, want %d and %q:\n%s", tt.args, code, tt.wantCode, tt.want, out)
		}
	}

	var diff struct {
		Files []struct{ Path, Diff string } `json:"files"`
	}
	if err := json.Unmarshal([]byte(c.Must("diff", "--source", repo, "--intent", "INT-001", "--json")), &diff); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for _, f := range diff.Files {
		paths[f.Path] = f.Diff
	}
	if !strings.Contains(paths["src/a.txt"], "+two") || !strings.Contains(paths["src/b.txt"], "+new") || len(paths) != 2 {
		t.Fatalf("diff --json files: %+v", diff.Files)
	}

	// The plan: the sed -i is one restore of src/a.txt, its temporary file
	// nowhere; the new file is removed.
	var dry struct {
		Plan struct {
			Steps []struct{ Action, Path, Note string } `json:"steps"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(c.Must("revert", "--source", repo, "--intent", "INT-001", "--dry-run", "--json")), &dry); err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, s := range dry.Plan.Steps {
		if s.Action != "skip" {
			steps = append(steps, s.Action+" "+s.Path)
		}
		if strings.Contains(s.Path, "sed") {
			t.Errorf("the plan replays sed's temporary file: %+v", s)
		}
	}
	if strings.Join(steps, ", ") != "remove src/b.txt, restore src/a.txt" {
		t.Fatalf("plan steps %q", steps)
	}

	// Mounted, the daemon reverts; the second time there is nothing to do.
	out := c.Must("revert", "--source", repo, "--intent", "INT-001")
	if !strings.Contains(out, "reverted: 2 step(s)") {
		t.Fatalf("revert:\n%s", out)
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "src/a.txt")); string(got) != "one\n" {
		t.Fatalf("src/a.txt after revert: %q", got)
	}
	for _, mounted := range []bool{true, false} {
		if !mounted {
			c.Must("unmount", ws)
		}
		out, code := c.Run("revert", "--source", repo, "--intent", "INT-001")
		if code != 0 || !strings.Contains(out, "intent INT-001 is already reverted") || strings.Contains(out, "CONFLICT") {
			t.Fatalf("second revert (mounted %v): exit %d:\n%s", mounted, code, out)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "src/a.txt")); string(got) != "one\n" {
		t.Fatalf("src/a.txt after the second revert: %q", got)
	}
}

// TestInitRefusesAMissingParent: a typo in init's DIR must not silently
// create a tree; --parents does it on purpose.
func TestInitRefusesAMissingParent(t *testing.T) {
	testenv.Parallel(t)
	c := testenv.NewCLI(t)
	deep := filepath.Join(c.Dir, "no", "such", "dir")
	out, code := c.Run("init", deep)
	if code != 1 || !strings.Contains(out, filepath.Join(c.Dir, "no", "such")+" does not exist") || !strings.Contains(out, "--parents") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "no")); !os.IsNotExist(err) {
		t.Fatalf("init created part of the path: %v", err)
	}
	c.Must("init", filepath.Join(c.Dir, "one-level"))
	c.Must("init", "--parents", deep)
	for _, dir := range []string{deep, filepath.Join(c.Dir, "one-level")} {
		if !policy.HasPolicy(dir) {
			t.Errorf("no policy in %s", dir)
		}
	}
}
