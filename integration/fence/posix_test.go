package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// TestPosix runs go-fuse's POSIX conformance suite, each case on a fresh
// mount whose intent covers everything: governance must not break
// filesystem semantics.
func TestPosix(t *testing.T) {
	// Serial: posixtest.FdLeak counts this process's descriptors (the other cases run in parallel below).
	testenv.Serial(t)
	names := make([]string, 0, len(posixtest.All))
	for name := range posixtest.All {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if name != "FdLeak" { // FdLeak counts this process's descriptors: it runs alone first
				t.Parallel()
			}
			if name == "FcntlFlockLocksFile" && testenv.TestDataPath() == "cached" {
				// It expects a process's fcntl locks on two descriptors to
				// conflict, as the passthrough path's locks held per handle
				// at the source do. The cached data path has no handles:
				// the kernel keeps the locks, with POSIX's rules, under
				// which a process's own locks never conflict, as on a disk
				// (TestCachedPathLocksStayInTheMount asserts them).
				t.Skip("the cached data path keeps locks in the kernel, per process as on a disk (docs/performance.md, \"The cached data path\")")
			}
			e := testenv.Mount(t, testenv.ScopePolicy, "INT-002", nil)
			// A directory of its own: the mount root holds .orchestration/.
			dir := filepath.Join(e.Mnt, "work")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			posixtest.All[name](t, dir)
		})
	}
}
