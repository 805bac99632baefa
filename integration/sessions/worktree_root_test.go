package sessions

import (
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
)

// gitInMountAsRoot runs git with args in dir as root, the human who
// mounted, with no configuration of the host's. The worktree belongs to
// the agent's user, so git's ownership check needs safe.directory, as it
// would in the worktree itself.
func gitInMountAsRoot(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := testenv.CommandIn(dir, "git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s as root in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}
