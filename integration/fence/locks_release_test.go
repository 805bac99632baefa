package fence

import (
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
)

// TestLockEndsWithItsDescriptorWhileTheFileStaysOpen: a lock taken
// through a descriptor ends when that descriptor is closed, even while
// another descriptor of the file stays open. On the passthrough path the
// kernel reads and writes every open of a file through one backing file,
// the daemon's first handle of it, which the later handles keep alive: a
// lock held on that first handle outlived its close, and the next flock
// of the file (the human's included) waited forever.
func TestLockEndsWithItsDescriptorWhileTheFileStaysOpen(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-002", map[string]string{"lockfile": "x\n"})
	// ofd takes an OFD write lock on the whole file through fd $1 (37 is
	// F_OFD_SETLK, 38 F_OFD_SETLKW), or, with "wait", on a new descriptor
	// of lockfile, waiting up to 5 s; it prints rc=0 once it holds it.
	ofd := `/usr/bin/python3 -c '
import fcntl, os, signal, struct, sys
lk = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)
class Late(Exception):
    pass
def late(*_):
    raise Late()
if sys.argv[1] == "wait":
    signal.signal(signal.SIGALRM, late)
    signal.alarm(5)
    fd = os.open("lockfile", os.O_RDWR)
    try:
        fcntl.fcntl(fd, 38, lk)
        print("rc=0")
    except Late:
        print("rc=1")
else:
    fcntl.fcntl(int(sys.argv[1]), 37, lk)
' `
	for _, c := range []struct{ name, take, ask string }{
		{"flock", "flock -x 3", "flock -w 5 -x lockfile true; echo rc=$?"},
		{"OFD lock", ofd + "3", ofd + "wait"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.T = t
			// fd 3 takes the lock; fd 4, opened after it, stays open while
			// fd 3 is closed; then another process asks for the lock.
			out, err := e.Sh("exec 3<>lockfile; " + c.take + "; exec 4<lockfile; exec 3<&-; " + c.ask + "; exec 4<&-")
			if err != nil || !strings.Contains(out, "rc=0") {
				t.Fatalf("the lock outlived the descriptor that took it (%v):\n%s", err, out)
			}
		})
	}
}
