package daemon

import (
	"strconv"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
)

// TestDenialGateCountsEveryDenial feeds floods of denials and checks that
// the ones recorded in full plus the summaries' repeats account for all
// of them, with few records.
func TestDenialGateCountsEveryDenial(t *testing.T) {
	agent := &ledger.Process{Uid: 1000, Comm: "sh"}
	tests := []struct {
		name        string
		n           int
		path        func(i int) string
		wantRecords int // recorded in full + summaries, at most
	}{
		{"one file", 10000, func(int) string { return "src/a.go" }, 2},
		{"one directory", 10000, func(i int) string { return "work/f" + itoa(i) }, 2},
		{"many directories", 10000, func(i int) string { return "d" + itoa(i) + "/f" }, maxKindsPerWindow + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newDenialThrottle()
			now := time.Unix(1000, 0)
			g.start = now
			full := 0
			for i := 0; i < tt.n; i++ {
				if g.admit(kindOf("open_write", "OUT_OF_SCOPE", "INT-001", tt.path(i), tt.path(i)+" is outside the scope", agent, nil), agent, nil, now) {
					full++
				}
			}
			if got := g.due(now.Add(denialWindow/2), false); got != nil {
				t.Fatalf("summaries before the window ended: %d", len(got))
			}
			sums := g.due(now.Add(denialWindow), false)
			total := full
			for _, c := range sums {
				if c.Repeats <= 0 || c.Event != ledger.EventDenied {
					t.Errorf("summary %+v", c)
				}
				total += c.Repeats
			}
			if total != tt.n {
				t.Errorf("accounted for %d denials, want %d", total, tt.n)
			}
			if records := full + len(sums); records > tt.wantRecords {
				t.Errorf("%d records for %d denials, want at most %d", records, tt.n, tt.wantRecords)
			}
			if again := g.due(now.Add(3*denialWindow), true); len(again) != 0 {
				t.Errorf("a new window repeats %d summaries", len(again))
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
