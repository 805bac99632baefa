package main

import (
	"strings"
	"testing"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/ledger"
)

// TestWatchScreenStartsWithRecentRecords: the terminal view shows the
// ledger's latest records before any live event, and counts only what
// happens while it watches.
func TestWatchScreenStartsWithRecentRecords(t *testing.T) {
	in := "INT-001"
	recs := []*ledger.Record{
		{Timestamp: "2026-01-02T03:04:05Z", Files: []ledger.File{{Path: "src/a.go"}},
			Metadata: ledger.Metadata{IntentFS: ledger.Governance{Event: ledger.EventWrite, IntentID: &in, Process: &ledger.Process{Pid: 7, Uid: 1000, Comm: "vim"}}}},
		{Timestamp: "2026-01-02T03:04:06Z", Files: []ledger.File{{Path: "docs/\x1b[31mx.md"}},
			Metadata: ledger.Metadata{IntentFS: ledger.Governance{Event: ledger.EventDenied, Op: "create", Reason: "outside", Session: &ledger.Session{ID: "s1"}}}},
		{Timestamp: "2026-01-02T03:04:07Z", Metadata: ledger.Metadata{IntentFS: ledger.Governance{Event: ledger.EventSelect, IntentID: &in}}},
	}
	var out strings.Builder
	s := &watchScreen{a: &app{stdout: &out}, fd: -1, counts: map[string]*watchCounts{}, mountpoint: "/ws"}
	s.prefill(recs)
	got := out.String()
	for _, w := range []string{"ok      write    src/a.go pid 7 vim", "DENIED  create   docs/\\x1b[31mx.md: outside", "governance"} {
		if !strings.Contains(got, w) {
			t.Errorf("screen lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "\x1b[31m") {
		t.Errorf("a path's escape sequence reached the terminal:\n%q", got)
	}
	if len(s.counts) != 0 {
		t.Errorf("recorded events were counted as the watch's: %v", s.counts)
	}
	if ev := recordEvent(recs[1]); ev.Kind != control.EventDenied || ev.Session != "s1" {
		t.Errorf("denied record: %+v", ev)
	}
}
