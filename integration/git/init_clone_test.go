package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/policy"
)

// TestInitOnACloneWithACommittedPolicy: a teammate's clone has the
// policy but not the local setup; init sets that up, keeps the policy
// and exits 0, saying what it did.
func TestInitOnACloneWithACommittedPolicy(t *testing.T) {
	testenv.Serial(t)
	c := testenv.NewCLI(t)
	origin := filepath.Join(c.Dir, "origin")
	testenv.WriteFile(t, filepath.Join(origin, policy.IntentsFile), testenv.AgentPolicy)
	testenv.WriteFile(t, filepath.Join(origin, "README.md"), "r\n")
	git := func(dir string, args ...string) string {
		t.Helper()
		out, err := testenv.CommandIn(dir, "git", append([]string{"-c", "user.name=h", "-c", "user.email=h@x", "-c", "init.defaultBranch=main"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git(origin, "init", "-q")
	git(origin, "add", "-A")
	git(origin, "commit", "-qm", "policy")
	git(c.Dir, "clone", "-q", origin, "clone")
	clone := filepath.Join(c.Dir, "clone")
	out, code := c.Run("init", "./clone")
	if code != 0 || !strings.Contains(out, "kept  clone/"+policy.IntentsFile) || !strings.Contains(out, "wrote clone/.orchestration/.intentignore") ||
		!strings.Contains(out, "notes.rewriteRef") || !strings.Contains(out, "intentfs mount ./clone MOUNTPOINT") {
		t.Fatalf("init on a clone: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(clone, policy.IntentsFile)); string(b) != testenv.AgentPolicy {
		t.Errorf("the committed policy changed:\n%s", b)
	}
	if got := strings.TrimSpace(git(clone, "config", "--get-all", "notes.rewriteRef")); got == "" {
		t.Error("notes.rewriteRef is not set")
	}
	if st := git(clone, "status", "--porcelain"); strings.Contains(st, "active_intents") {
		t.Errorf("the policy shows as changed:\n%s", st)
	}
}
