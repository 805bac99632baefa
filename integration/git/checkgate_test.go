package git

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

// ciClone is what CI does for a pull request: a fresh clone of the
// remote with the PR's branch checked out, and the remote's notes.
func ciClone(t *testing.T, c *testenv.CLI, origin, branch string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ci-"+branch)
	os.Chmod(filepath.Dir(filepath.Dir(dir)), 0o755)
	if err := os.Chmod(filepath.Dir(dir), 0o777); err != nil {
		t.Fatal(err)
	}
	testenv.GitAs(t, filepath.Dir(dir), "git clone -q "+origin+" "+filepath.Base(dir)+" && cd "+filepath.Base(dir)+" && git checkout -q -b "+branch+" origin/"+branch)
	return dir
}

// runCIScript runs docs/ci/intentfs-check.sh in dir as a CI job would:
// as the clone's owner (uid 1000), with an environment of its own,
// intentfs from $INTENTFS, the base branch named.
func runCIScript(t *testing.T, c *testenv.CLI, dir, baseBranch string) (string, int) {
	t.Helper()
	script, err := testenv.ModuleFile("docs", "ci", "intentfs-check.sh")
	if err != nil {
		t.Fatal(err)
	}
	// The binary's directory is root's alone by default.
	if err := os.Chmod(filepath.Dir(c.Bin), 0o755); err != nil {
		t.Fatal(err)
	}
	runtime := t.TempDir()
	os.Chmod(runtime, 0o777)
	cmd := exec.Command("setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sh", script, baseBranch)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"INTENTFS=" + c.Bin, "INTENTFS_RUNTIME_DIR=" + runtime}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", script, err)
	}
	return string(out), code
}

// TestCheckRulesFromTheBase: CI judges a pull request by the policy and
// ignore files of the branch it is merged into, never by the PR's own.
// An agent's PR made in its own clone (outside any mount) that adds an
// .intentignore exempting everything, one that adds
// .orchestration/.intentignore, and one that widens a scope in the
// policy each fail check on a fresh clone, naming the file as a
// governance change a human lands on the base first; an honest PR made
// through the mount passes, saying where the rules came from. The CI
// recipe (docs/ci/intentfs-check.sh) passes the honest PR and fails the
// attack, run as CI runs it.
func TestCheckRulesFromTheBase(t *testing.T) {
	testenv.Serial(t)
	c, e, origin, base := testenv.GateRepo(t)
	root := filepath.Dir(origin)

	// The honest PR: work through the mount, its notes pushed with it.
	testenv.GitAs(t, e.Mnt, "git checkout -q -b pr-ok && printf 'package api\\n\\nfunc Get() {}\\n' > src/api.go && git add src/api.go && git commit -qm 'the api'")
	c.Must("notes", "sync", "--source", e.Src)
	c.Must("notes", "push", "--source", e.Src)
	testenv.GitAs(t, e.Src, "git push -q origin pr-ok")

	// The attacks, from the agent's own clone outside any mount.
	testenv.GitAs(t, root, "git clone -q "+origin+" own")
	own := filepath.Join(root, "own")
	attacks := []struct{ branch, script, path string }{
		{"pr1", "printf '*\\n' > .intentignore && echo pwned > README.md && mkdir -p docs && echo evil > docs/guide.md && git add -A && git commit -qm 'tidy up'", ".intentignore"},
		{"pr2", "printf '*\\n' > .orchestration/.intentignore && echo pwned > README.md && git add -A && git commit -qm 'tidy up'", ".orchestration/.intentignore"},
		{"pr3", `sed -i 's|"src/\*\*"|"**"|' .orchestration/active_intents.yaml && grep -q '"\*\*"' .orchestration/active_intents.yaml && git commit -qam 'scope'`, policy.IntentsFile},
	}
	for _, a := range attacks {
		testenv.GitAs(t, own, "git checkout -q -b "+a.branch+" origin/main && "+a.script+" && git push -q origin "+a.branch)
	}

	// CI, honest PR.
	ci := ciClone(t, c, origin, "pr-ok")
	c.Must("notes", "fetch", "--source", ci)
	out, code := c.Run("check", "--source", ci, "origin/main..origin/pr-ok")
	t.Logf("CI: intentfs check origin/main..origin/pr-ok (exit %d):\n%s", code, out)
	wantRules := "rules: " + policy.IntentsFile + " at " + base[:12] + " (base)"
	if code != 0 || !strings.HasPrefix(out, "OK") || !strings.Contains(out, wantRules) {
		t.Fatalf("the honest PR does not pass, saying where the rules came from (%q):\n%s", wantRules, out)
	}
	out, code = c.Run("check", "--source", ci, "--json", "origin/main..origin/pr-ok")
	var rep struct {
		Rules struct {
			Commit, From, Policy string
			IgnoreFiles          []string `json:"ignore_files"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Rules.Commit != base || rep.Rules.From != "base" || rep.Rules.Policy != policy.IntentsFile {
		t.Fatalf("check --json does not carry where the rules came from (exit %d, %v):\n%s", code, err, out)
	}

	for _, a := range attacks {
		ci := ciClone(t, c, origin, a.branch)
		c.Must("notes", "fetch", "--source", ci)
		for _, args := range [][]string{{"origin/main..origin/" + a.branch}, {"--strict", "origin/main..HEAD"}} {
			out, code := c.Run(append([]string{"check", "--source", ci}, args...)...)
			t.Logf("CI: intentfs check %s (exit %d):\n%s", strings.Join(args, " "), code, out)
			if code != 1 || !testenv.LineWith(out, a.path, "governance file", "land it on the base first") || !strings.Contains(out, wantRules) {
				t.Errorf("%s: check does not fail naming %s as a governance change (exit %d):\n%s", a.branch, a.path, code, out)
			}
		}
		// The PR's own head cannot be where the rules come from.
		if out, code := c.Run("check", "--source", ci, "--policy-from", "HEAD", "origin/main..HEAD"); code == 0 || !strings.Contains(out, "is in the range being checked") {
			t.Errorf("%s: --policy-from HEAD was not refused (exit %d):\n%s", a.branch, code, out)
		}
	}
	// A range without a base has no trusted side to read rules from.
	if out, code := c.Run("check", "--source", ci, "origin/pr3"); code == 0 || !strings.Contains(out, "--policy-from") {
		t.Errorf("a range with no base was not refused (exit %d):\n%s", code, out)
	}

	// The CI recipe, as a CI job runs it, on a fresh clone per PR.
	out, code = runCIScript(t, c, ciClone(t, c, origin, "pr-ok"), "main")
	t.Logf("docs/ci/intentfs-check.sh main, honest PR (exit %d):\n%s", code, out)
	if code != 0 || !strings.Contains(out, wantRules) {
		t.Errorf("the CI recipe fails the honest PR (exit %d):\n%s", code, out)
	}
	out, code = runCIScript(t, c, ciClone(t, c, origin, "pr1"), "main")
	t.Logf("docs/ci/intentfs-check.sh main, the .intentignore PR (exit %d):\n%s", code, out)
	if code == 0 || !testenv.LineWith(out, ".intentignore", "governance file") || !testenv.LineWith(out, "README.md", "never written through the mount") ||
		!testenv.LineWith(out, "docs/guide.md", "never written through the mount") {
		t.Errorf("the CI recipe passes the .intentignore PR (exit %d):\n%s", code, out)
	}
}
