package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// AgentUID and AgentGID are the unprivileged user the tests' agents run as.
const AgentUID, AgentGID = 1000, 1000

// ChownTree gives the tree at root to the agent, as a checkout the agent's
// user cloned would be: the kernel's mode checks then let the agent write
// everything, and only intentfs stands in the way.
func ChownTree(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, AgentUID, AgentGID)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ReachableByAgent lets the agent reach the source and the mount by
// absolute path: t.TempDir's parent directory is root's and 0700, which
// would otherwise stop the agent (and git, which stats the path up to
// the root) before intentfs is ever asked.
func (e *Env) ReachableByAgent() {
	e.T.Helper()
	for _, d := range []string{filepath.Dir(e.Src), filepath.Dir(e.Mnt)} {
		if err := os.Chmod(d, 0o755); err != nil {
			e.T.Fatal(err)
		}
	}
}
