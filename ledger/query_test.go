package ledger

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

func TestQuery(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_trace.jsonl")
	w := openTestWriter(t, path, nil)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(min int, c Change) {
		c.Time = base.Add(time.Duration(min) * time.Minute)
		w.Append(NewRecord(c, "t"))
	}
	add(0, Change{Event: EventCreate, Path: "src/a.go", Intent: "INT-001", Process: &Process{Comm: "sh"}})
	add(1, Change{Event: EventWrite, Path: "src/a.go", Intent: "INT-002", Process: &Process{Comm: "sed"}})
	add(2, Change{Event: EventRename, Path: "lib/b.go", FromPath: "src/a.go", Intent: "INT-002", Process: &Process{Comm: "mv"}})
	add(3, Change{Event: EventDenied, Path: "README.md", Intent: "INT-001", Validation: "FAIL", Process: &Process{Comm: "sh"}})
	add(4, Change{Event: EventCreate, Path: "docs/x.md", Intent: "INT-001", Validation: "FAIL", Code: "OUT_OF_SCOPE", Process: &Process{Comm: "sh"}})
	w.Close()
	tests := []struct {
		name string
		f    Filter
		want string
	}{
		{"all but header", Filter{Events: []Event{EventCreate, EventWrite, EventRename, EventDenied}}, "[create write rename denied create]"},
		{"intent", Filter{Intent: "INT-002"}, "[write rename]"},
		{"path glob matches from_path", Filter{PathGlob: "src/**"}, "[create write rename]"},
		{"literal path", Filter{PathGlob: "README.md"}, "[denied]"},
		{"since (the header is dated now)", Filter{Since: base.Add(90 * time.Second)}, "[header rename denied create]"},
		{"event", Filter{Events: []Event{EventDenied}}, "[denied]"},
		{"comm", Filter{Comm: "sed"}, "[write]"},
		{"nothing", Filter{Intent: "INT-404"}, "[]"},
		{"would-deny: made changes with validation FAIL, not denials", Filter{WouldDeny: true}, "[create]"},
	}
	for _, tt := range tests {
		var got []Event
		if err := Query(path, tt.f, func(r *Record) error { got = append(got, r.Gov().Event); return nil }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, got, tt.want)
		}
		// The raw path, which skips decoding when it can, selects the same.
		var raw []Event
		QueryRaw(path, tt.f, func(b []byte) error {
			var r Record
			json.Unmarshal(b, &r)
			raw = append(raw, r.Gov().Event)
			return nil
		})
		if fmt.Sprint(raw) != tt.want {
			t.Errorf("%s: QueryRaw %v, want %s", tt.name, raw, tt.want)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	tests := map[string]time.Time{
		"2h": now.Add(-2 * time.Hour), "30m": now.Add(-30 * time.Minute), "7d": now.Add(-7 * 24 * time.Hour),
		"2026-05-01": time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), "2026-05-01T08:00:00Z": time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC),
	}
	for in, want := range tests {
		if got, err := ParseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	if _, err := ParseSince("yesterday", now); err == nil {
		t.Error("garbage accepted")
	}
}
