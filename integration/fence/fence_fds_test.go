package fence

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/control"
)

// fdBudget is the descriptor limit the attack test gives this process
// (which is the daemon): small, so the attack needs few directories.
const fdBudget = 512

// lowerFileLimit sets this process's soft descriptor limit to n until the
// test ends. The hard limit stays: lowering it could not be undone
// without CAP_SYS_RESOURCE, and the daemon has already raised its soft
// limit to it at the mount.
func lowerFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: old.Max}); err != nil {
		t.Fatalf("lowering the descriptor limit: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Errorf("restoring the descriptor limit: %v", err)
		}
	})
}

// TestFenceDirectoryDescriptorsAreBounded is finding F4: every directory
// the mount looks into kept a descriptor of the daemon, outside the
// per-uid handle limit. An agent making thousands of directories on an
// exempt path and looking up a missing name in each ran the daemon out of
// descriptors: root's opens through the mount failed with EMFILE, and the
// control socket's accept loop ended for good, so status and unmount hung.
// The cached directory descriptors are now bounded mount-wide (a quarter
// of the descriptor limit); past the bound a call opens one and closes it.
func TestFenceDirectoryDescriptorsAreBounded(t *testing.T) {
	// Serial: lowers this process's descriptor limit and counts its descriptors, which parallel tests' daemons share.
	testenv.Serial(t)
	e := mountFence(t, testenv.ScopePolicy, "INT-001", map[string]string{".intentignore": "node_modules/\n", "node_modules/.keep": "", "src/kept.txt": "kept\n"},
		func(src string) { testenv.ChownTree(t, src) })
	// Registered after the mount, so it is undone before the unmount: a
	// failing attack must not leave the limit too low to unmount.
	lowerFileLimit(t, fdBudget)
	e.ReachableByAgent()
	// Earlier tests in this process may hold descriptors of their own:
	// the attack is measured by what it adds.
	openBefore := openDescriptors(t)
	const dirs = 3 * fdBudget / 2
	script := `
import os, sys
os.makedirs("node_modules/fdx", exist_ok=True)
failed = 0
for i in range(int(sys.argv[1])):
    d = "node_modules/fdx/%d" % i
    try:
        os.mkdir(d)
    except OSError:
        failed += 1
    try:
        os.stat(d + "/missing")
    except FileNotFoundError:
        pass
    except OSError:
        failed += 1
print("failed", failed)
`
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "/usr/bin/python3 "+testenv.WorldReadable(t, "fdx.py", script)+" "+strconv.Itoa(dirs))
	if err != nil {
		t.Fatalf("as uid %d: %v\n%s", testenv.AgentUID, err, out)
	}
	if strings.TrimSpace(out) != "failed 0" {
		t.Errorf("the attack's own calls failed (the daemon ran out of descriptors): %s", out)
	}
	if added := openDescriptors(t) - openBefore; added > fdBudget/4+16 {
		t.Errorf("the attack left the daemon holding %d more descriptors; the directory cache should keep it near a quarter of %d", added, fdBudget)
	}
	// Root still opens files through the mount, in this process and in
	// another one.
	if b, err := os.ReadFile(filepath.Join(e.Mnt, "src/kept.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("root reading through the mount: %q, %v", b, err)
	}
	if out := e.MustSh("cat src/kept.txt"); out != "kept\n" {
		t.Errorf("cat src/kept.txt = %q", out)
	}
	// And the control socket answers.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := control.Call(ctx, e.D.SocketPath(), control.Request{Op: "status"})
	if err != nil || resp.Status == nil || resp.Status.ActiveIntent != "INT-001" {
		t.Fatalf("status over the control socket after the attack: %+v, %v", resp, err)
	}
}

// openDescriptors counts this process's open descriptors.
func openDescriptors(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
