package fence

import (
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/integration/testenv"
)

// TestBlockingLockEndsWhenTheCallerGivesUp: a lock another process holds
// through the mount (an agent's) keeps a blocking lock waiting, but not
// past the waiter's own timeout: flock -w's alarm reaches the daemon as
// an INTERRUPT, and the wait ends with EINTR. A blocking lock in the
// daemon that ignored it left the waiter hung for as long as the holder
// held on.
func TestBlockingLockEndsWhenTheCallerGivesUp(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-002", map[string]string{"lockfile": "x\n"})
	for _, kind := range []struct{ name, flag string }{{"flock", ""}, {"fcntl", "-F "}} {
		t.Run(kind.name, func(t *testing.T) {
			e.T = t
			start := time.Now()
			out, err := e.Sh("flock -x " + kind.flag + "lockfile -c 'timeout 20 flock -w 1 -x " + kind.flag + "lockfile true; echo waited=$?'")
			if err != nil || !strings.Contains(out, "waited=1") || time.Since(start) > 10*time.Second {
				t.Fatalf("a blocking lock behind a held one, with a 1 s timeout: %v after %v\n%s", err, time.Since(start), out)
			}
		})
	}
}
