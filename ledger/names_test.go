package ledger_test

import (
	"encoding/json"
	"testing"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/ledger/ledgertest"
)

// TestNamesRoundTrip records paths that are not UTF-8 (and ones that
// merely look escaped) and reads back the exact bytes from a line that is
// still valid Agent Trace.
func TestNamesRoundTrip(t *testing.T) {
	tests := []struct{ path, from, shown string }{
		{"src/a.go", "", "src/a.go"},
		{"caf\xe9\xff", "", `caf\xe9\xff`},
		{"new\xfe", "old\xff/x", `new\xfe`},
		{`looks\xe9escaped`, "", `looks\xe9escaped`},
		{"nl\nname", "", "nl\nname"},
	}
	for _, tt := range tests {
		ev := ledger.EventCreate
		if tt.from != "" {
			ev = ledger.EventRename
		}
		line, err := json.Marshal(ledger.NewRecord(ledger.Change{Event: ev, Path: tt.path, FromPath: tt.from}, "test"))
		if err != nil {
			t.Fatal(err)
		}
		if err := ledgertest.ValidateLine(line); err != nil {
			t.Errorf("%q: not valid Agent Trace: %v\n%s", tt.path, err, line)
		}
		var shown struct {
			Files []struct{ Path string } `json:"files"`
		}
		if err := json.Unmarshal(line, &shown); err != nil || shown.Files[0].Path != tt.shown {
			t.Errorf("%q is shown in the line as %q, want %q", tt.path, shown.Files[0].Path, tt.shown)
		}
		var back ledger.Record
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatal(err)
		}
		if back.Path() != tt.path || back.Gov().FromPath != tt.from {
			t.Errorf("read back %q from %q, want %q from %q", back.Path(), back.Gov().FromPath, tt.path, tt.from)
		}
	}
}
