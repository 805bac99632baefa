package daemon

import (
	"testing"
	"time"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/ledger"
)

func TestDenialRingCollapsesOneSave(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p1, p2 := &ledger.Process{Pid: 10}, &ledger.Process{Pid: 11}
	den := func(p *ledger.Process, at time.Duration, op, rel string) control.Denial {
		return control.Denial{Time: t0.Add(at), Op: op, Path: rel, Code: "OUT_OF_SCOPE", Process: p}
	}
	tests := []struct {
		name    string
		in      []control.Denial
		lines   int
		repeats int // of the first line
	}{
		{"one save's temporaries", []control.Denial{den(p1, 0, "create", "docs/a"), den(p1, 100*time.Millisecond, "create", "docs/b"), den(p1, 900*time.Millisecond, "create", "docs/c")}, 1, 2},
		{"another process", []control.Denial{den(p1, 0, "create", "docs/a"), den(p2, 0, "create", "docs/b")}, 2, 0},
		{"another directory", []control.Denial{den(p1, 0, "create", "docs/a"), den(p1, 0, "create", "src/b")}, 2, 0},
		{"another operation", []control.Denial{den(p1, 0, "create", "docs/a"), den(p1, 0, "unlink", "docs/a")}, 2, 0},
		{"a second later", []control.Denial{den(p1, 0, "create", "docs/a"), den(p1, time.Second, "create", "docs/a")}, 2, 0},
		{"no process", []control.Denial{den(nil, 0, "create", "docs/a"), den(nil, 0, "create", "docs/a")}, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := denialRing{size: 100}
			for _, dn := range tt.in {
				r.add(dn)
			}
			got := r.list()
			if len(got) != tt.lines || got[0].Repeats != tt.repeats {
				t.Errorf("%d lines, first with %d repeats; want %d lines, %d repeats", len(got), got[0].Repeats, tt.lines, tt.repeats)
			}
		})
	}
}
