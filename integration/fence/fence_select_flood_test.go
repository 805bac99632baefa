package fence

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// TestFenceSelectFloodIsBounded is finding F5: each write to
// .intentfs/active wrote a select record of some 630 bytes, so an agent
// alternating two intents in a loop grew the ledger by megabytes a
// second until the disk was full, after which the fail-closed ledger
// refused every change for everyone. Selects are now rate limited per
// uid (a burst, then a few a second); the writes beyond it fail with
// EBUSY and are counted as denials are, not recorded one by one.
func TestFenceSelectFloodIsBounded(t *testing.T) {
	// Serial: the rate limit lets more selects through the longer the flood runs, which a loaded machine stretches past the ledger bound.
	testenv.Serial(t)
	e := mountFence(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/.keep": ""}, func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	ledgerSize := func() int64 {
		t.Helper()
		if err := e.D.FlushLedger(); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(e.D.LedgerPath())
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	before := ledgerSize()
	const flood = 5000
	const script = `
import errno, os, sys
ok = busy = other = 0
for i in range(int(sys.argv[1])):
    fd = os.open(".intentfs/active", os.O_WRONLY)
    try:
        os.write(fd, b"INT-002\n" if i % 2 == 0 else b"INT-001\n")
        ok += 1
    except OSError as e:
        if e.errno == errno.EBUSY:
            busy += 1
        else:
            other += 1
    finally:
        os.close(fd)
print(ok, busy, other)
`
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "/usr/bin/python3 "+testenv.WorldReadable(t, "flood.py", script)+" "+strconv.Itoa(flood))
	if err != nil {
		t.Fatalf("as uid %d: %v\n%s", testenv.AgentUID, err, out)
	}
	var ok, busy, other int
	if _, err := fmt.Sscan(out, &ok, &busy, &other); err != nil {
		t.Fatalf("flood output %q: %v", out, err)
	}
	t.Logf("%d selects taken, %d refused with EBUSY, %d other errors", ok, busy, other)
	// Once refused, half the writes name the intent that stays active:
	// those succeed and change nothing, so about half are refused.
	if other != 0 || ok+busy != flood || busy < flood/3 {
		t.Errorf("flood: %d taken, %d EBUSY, %d other; want about half refused with EBUSY", ok, busy, other)
	}
	// Every refusal is counted: in the counters at once, and in the
	// ledger by the summary at the end of the denial window.
	if denied := e.D.Status().Counters.Denied; denied < uint64(busy) {
		t.Errorf("denied counter = %d, want at least the %d refusals", denied, busy)
	}
	testenv.WaitFor(t, func() bool {
		counted := 0
		for _, r := range e.Records() {
			if g := r.Gov(); g.Event == ledger.EventDenied && g.Code == "SELECT_RATE_LIMITED" {
				counted += max(1, g.Repeats)
			}
		}
		return counted >= busy
	}, "ledger denial records counting every refused select")
	const bound = 128 << 10
	if grew := ledgerSize() - before; grew > bound {
		t.Errorf("the ledger grew by %d bytes for %d selects, want at most %d", grew, flood, bound)
	} else {
		t.Logf("the ledger grew by %d bytes for %d select writes", grew, flood)
	}
	rep := ledger.Verify(ledger.VerifyOptions{Ledger: e.D.LedgerPath(), Source: e.Src})
	if !rep.ChainOK() {
		t.Errorf("verify after the flood: %v", rep.Problems)
	}
	// Once the bucket refills, a single select works again.
	want := "INT-002"
	if e.D.ActiveIntent() == want {
		want = "INT-001"
	}
	testenv.WaitFor(t, func() bool {
		_, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "echo "+want+" > .intentfs/active")
		return err == nil
	}, "a select after the flood")
	if out, _ := e.ShAs(testenv.AgentUID, testenv.AgentGID, "cat .intentfs/active"); strings.TrimSpace(out) != want {
		t.Errorf("active after the flood = %q, want %s", out, want)
	}
}
