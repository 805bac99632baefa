package daemon

import (
	"testing"
	"time"
)

func TestSelectLimiter(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name    string
		after   time.Duration // wait before the second round
		first   int           // selects tried at start
		second  int           // selects tried after the wait
		allowed int           // of all tried, how many pass
	}{
		{"a burst passes", 0, selectBurst, 0, selectBurst},
		{"beyond the burst is refused", 0, selectBurst + 30, 0, selectBurst},
		{"one second refills the rate", time.Second, selectBurst + 5, 10, selectBurst + selectsPerSecond},
		{"refills stop at the burst", time.Hour, selectBurst, 2 * selectBurst, 2 * selectBurst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newSelectLimiter()
			got := 0
			for range tc.first {
				if l.allow(1000, start) {
					got++
				}
			}
			for range tc.second {
				if l.allow(1000, start.Add(tc.after)) {
					got++
				}
			}
			if got != tc.allowed {
				t.Fatalf("%d selects allowed, want %d", got, tc.allowed)
			}
			if !l.allow(1001, start) {
				t.Fatal("another uid's allowance was used up too")
			}
		})
	}
}

func TestSelectLimiterBoundsUIDs(t *testing.T) {
	l := newSelectLimiter()
	now := time.Unix(1_000_000, 0)
	for uid := range uint32(3 * maxSelectBuckets) {
		l.allow(uid, now)
	}
	if n := len(l.byUID); n > maxSelectBuckets {
		t.Fatalf("%d uids tracked, want at most %d", n, maxSelectBuckets)
	}
}
