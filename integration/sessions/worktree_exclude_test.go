package sessions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
)

// TestWorktreeMountExcludesTheAgentFile: the CLAUDE.md a mount of a
// linked worktree creates is excluded in the repository's exclude file,
// which git reads from the common directory for every work tree, so the
// agent's `git add -A` in the worktree does not commit intentfs's guide.
// The worktree belongs to the agent's user, and the human (root) runs
// git in the mount.
func TestWorktreeMountExcludesTheAgentFile(t *testing.T) {
	testenv.Parallel(t)
	testenv.RequireFUSE(t)
	repo, wt := repoWithWorktree(t, filepath.Dir(testenv.SourceOutsideTmp(t)))
	c := testenv.NewCLI(t)
	ws := t.TempDir()
	c.MountCLI(wt, ws)
	if _, err := os.Stat(filepath.Join(wt, "CLAUDE.md")); err != nil {
		t.Fatalf("the mount created no CLAUDE.md in the worktree: %v", err)
	}
	ex, err := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude"))
	if err != nil || !strings.Contains(string(ex), "\n/CLAUDE.md\n") {
		t.Fatalf("the repository's info/exclude after the mount created CLAUDE.md: %v\n%s", err, ex)
	}
	if out := gitInMountAsRoot(t, ws, "status", "--porcelain"); strings.Contains(out, "CLAUDE.md") {
		t.Fatalf("git status in the worktree's mount shows the guide:\n%s", out)
	}
}
