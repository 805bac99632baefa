package fence

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentfs/intentfs/integration/testenv"
	"github.com/intentfs/intentfs/ledger"
)

// TestCachedTempRenamedIntoPlace: sed -i, and a loop that writes a
// temporary, closes it and renames it over a file, many times, while
// another process lists the directory and the kernel drops the dentries
// and inodes no one uses (as memory pressure does). The kernel can then
// forget the node a temporary's CREATE made, whose writer has not ended,
// and look the name up anew: the rename moves that other node. On the
// cached data path a temporary's writes are recorded when they pause, when
// its node is forgotten, or before the rename puts it in place: never
// under the temporary's name after the rename, which would leave the
// ledger saying the name still exists (verify --source fails).
func TestCachedTempRenamedIntoPlace(t *testing.T) {
	// Serial: it writes /proc/sys/vm/drop_caches every 5 ms, which drops the dentries and inodes of every mount on the machine, other tests' too.
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/step.h": "v0\n", "src/target.txt": "t0\n"})
	const lister = `( while :; do ls -l src >/dev/null 2>&1; done ) & lister=$!; trap 'kill $lister' EXIT; `
	stop := forgetNodesUntilStopped(t)
	defer stop()
	cachedAgent(e, lister+`i=0; while [ $i -lt 40 ]; do sed -i "s/^v$i\$/v$((i+1))/" src/step.h || exit 1; i=$((i+1)); done`)
	cachedAgent(e, lister+`python3 - <<'EOF'
import os, time
for i in range(60):
    tmp = "src/.target.txt.tmp%d" % i
    with open(tmp, "w") as f:
        f.write("t%d\n" % i)
    time.sleep(0.02)
    os.rename(tmp, "src/target.txt")
EOF`)
	stop()
	if got, _ := e.SrcContent("src/step.h"); got != "v40\n" {
		t.Fatalf("src/step.h holds %q after the seds", got)
	}
	e.D.Status() // records what the writers still hold
	renamedAway := map[string]int{}
	for i, r := range e.Records() {
		g := r.Gov()
		if at, ok := renamedAway[r.Path()]; ok && g.Event != ledger.EventDenied {
			t.Errorf("record %d (%s %s) names a temporary renamed away at record %d", i, g.Event, r.Path(), at)
		}
		if g.Event == ledger.EventRename {
			renamedAway[g.FromPath] = i
			delete(renamedAway, r.Path())
		}
	}
	if out, err := e.CLI("verify", "--source", e.Src); err != nil || !strings.Contains(out, "OK") {
		t.Fatalf("intentfs verify --source: %v\n%s", err, out)
	}
}

// forgetNodesUntilStopped has the kernel drop the dentries and inodes it
// does not use, every few milliseconds until the returned func is called:
// a temporary closed by its creator is then forgotten before it is renamed,
// as memory pressure does on a busy machine.
func forgetNodesUntilStopped(t *testing.T) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
					t.Errorf("dropping the kernel's dentries and inodes: %v", err)
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}
