package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/policy"
)

// TestCheckWithoutUpstreamNamesTheRangeToGive: on a new branch with no
// upstream the default range is all of HEAD's history, and the human's
// initial commit, made before any mount, fails it. check says which
// range to give instead, and that range passes.
func TestCheckWithoutUpstreamNamesTheRangeToGive(t *testing.T) {
	testenv.Serial(t)
	c := testenv.NewCLI(t)
	repo := filepath.Join(c.Dir, "repo")
	testenv.WriteFile(t, filepath.Join(repo, policy.IntentsFile), testenv.AgentPolicy)
	testenv.WriteFile(t, filepath.Join(repo, "src", "main.go"), "package main\n")
	git := func(args ...string) string {
		t.Helper()
		out, err := testenv.CommandIn(repo, "git", append([]string{"-c", "user.name=h", "-c", "user.email=h@x", "-c", "init.defaultBranch=main"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "initial import")
	git("switch", "-q", "-c", "feature")
	root := git("rev-parse", "--short=12", "HEAD")
	out, code := c.Run("check", "--source", repo)
	if code != 1 || !strings.Contains(out, "no upstream") || !strings.Contains(out, `initial commit `+root+` ("initial import")`) ||
		!strings.Contains(out, "intentfs check "+root+"..HEAD") {
		t.Fatalf("check on a new branch: exit %d\n%s", code, out)
	}
	if out, code := c.Run("check", "--source", repo, root+"..HEAD"); code != 0 {
		t.Errorf("the range check advised: exit %d\n%s", code, out)
	}
}
