package testenv

import (
	"testing"
	"time"
)

// permissionLatencyBound is what the permission-change tests fail above.
// The target is far lower (200 ms: the watch's latency plus a request);
// the bound leaves room for a loaded machine, and each test logs what it
// measured.
const permissionLatencyBound = time.Second

// RefusedWithin polls, as uid 1000, script in the mount every 10 ms until
// it fails, and returns how long that took from start. It fails the test
// past permissionLatencyBound.
func (e *Env) RefusedWithin(t *testing.T, what, script string, start time.Time) time.Duration {
	t.Helper()
	for {
		if _, err := e.ShAs(1000, 1000, script); err != nil {
			took := time.Since(start)
			t.Logf("%s: refused through the mount after %v (target < 200ms)", what, took.Round(time.Millisecond))
			return took
		}
		if took := time.Since(start); took > permissionLatencyBound {
			t.Fatalf("%s: uid 1000 still allowed %q through the mount %v after the change in the source", what, script, took.Round(time.Millisecond))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
