package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"strings"
	"testing"
)

// TestLocksHoldAcrossProcesses checks that advisory locks taken through
// the mount exclude other processes and are released when their holder
// closes the file. Closes reach the daemon only as RELEASE (handles are
// opened FOPEN_NOFLUSH), so a lock that outlived its holder would show
// here.
func TestLocksHoldAcrossProcesses(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-002", map[string]string{"lockfile": "x\n"})
	cases := []struct {
		name, script string
		wantHeld     bool
	}{
		{"flock held by another process", "flock -x lockfile -c 'flock -n -x lockfile true'", true},
		// The RELEASE that drops the lock is sent after close(2) returns,
		// as a background request: wait for it rather than race it (up
		// to 20 s: CI's loaded /dev/fuse pass once took more than 5).
		{"flock released at close", "flock -x lockfile true && flock -w 20 -x lockfile true", false},
		{"fcntl lock held by another process", "flock -x -F lockfile -c 'flock -n -x lockfile true'", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.T = t
			out, err := e.Sh(c.script)
			held := err != nil
			if held != c.wantHeld {
				t.Fatalf("%s: lock held = %v, want %v (%v)\n%s", c.script, held, c.wantHeld, err, out)
			}
			if strings.Contains(out, "Permission denied") {
				t.Fatalf("%s: %s", c.script, out)
			}
		})
	}
}
