package ledger

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger/ledgertest"
)

func TestRecordEncoding(t *testing.T) {
	proc := &Process{Pid: 42, Uid: 1000, Gid: 1000, Comm: "sed", Cmdline: []string{"sed", "-i", "s/a/b/", "f"}, Exe: "/usr/bin/sed"}
	h := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name   string
		change Change
		class  MutationClass
		ranges int
		files  int
	}{
		{"create text", Change{Event: EventCreate, Path: "src/a.go", Intent: "INT-001", PostHash: h, Lines: 12, Validation: "PASS", Process: proc}, ClassCreation, 1, 1},
		{"write binary", Change{Event: EventWrite, Path: "img.png", Intent: "INT-001", PreHash: h, PostHash: h, Validation: "PASS"}, ClassEvolution, 0, 1},
		{"delete", Change{Event: EventDelete, Path: "old.go", Intent: "INT-001", PreHash: h, Validation: "PASS"}, ClassDeletion, 0, 1},
		{"rename", Change{Event: EventRename, Path: "b.go", FromPath: "a.go", Intent: "INT-001", Validation: "PASS"}, ClassRename, 0, 1},
		{"chmod", Change{Event: EventChmod, Path: "run.sh", Intent: "INT-001", Mode: "0755", Validation: "PASS"}, ClassMetadata, 0, 1},
		{"denied without intent", Change{Event: EventDenied, Path: "x", Op: "create", Code: "NO_ACTIVE_INTENT", Reason: "no intent", Validation: "FAIL"}, "", 0, 1},
		{"select", Change{Event: EventSelect, Intent: "INT-002", FromIntent: "INT-001"}, "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change.Time = time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
			r := NewRecord(tt.change, "test")
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if err := ledgertest.ValidateLine(line); err != nil {
				t.Fatalf("schema: %v\n%s", err, line)
			}
			var back Record
			if err := json.Unmarshal(line, &back); err != nil {
				t.Fatal(err)
			}
			g := back.Gov()
			if g.MutationClass != tt.class || g.Event != tt.change.Event || Str(g.IntentID) != tt.change.Intent {
				t.Errorf("governance = %+v", g)
			}
			if len(back.Files) != tt.files {
				t.Fatalf("files = %d, want %d", len(back.Files), tt.files)
			}
			if back.Timestamp != "2026-01-02T03:04:05.0000006Z" {
				t.Errorf("timestamp = %s", back.Timestamp)
			}
			if tt.files == 1 {
				conv := back.Files[0].Conversations[0]
				if len(conv.Ranges) != tt.ranges {
					t.Errorf("ranges = %v", conv.Ranges)
				}
				if tt.ranges == 1 && (conv.Ranges[0].EndLine != 12 || conv.Ranges[0].ContentHash != h) {
					t.Errorf("range = %+v", conv.Ranges[0])
				}
				if (tt.change.Intent != "") != (len(conv.Related) == 1) {
					t.Errorf("related = %v", conv.Related)
				} else if tt.change.Intent != "" && conv.Related[0].URL != "urn:intentfs:intent:"+tt.change.Intent {
					t.Errorf("related url = %s", conv.Related[0].URL)
				}
			}
			if !strings.Contains(string(line), `"pre_hash":`) || !strings.Contains(string(line), `"post_hash":`) {
				t.Errorf("pre_hash/post_hash must be present (null when absent): %s", line)
			}
		})
	}
}

func TestSchemaRejectsBadRecords(t *testing.T) {
	bad := []string{
		`{}`,
		`{"version":"0.1.0","id":"not-a-uuid","timestamp":"2026-01-01T00:00:00Z","files":[]}`,
		`{"version":"0.1.0","id":"3f1c8a52-6a43-4f4e-9a57-1b0c2f6d8e11","timestamp":"yesterday","files":[]}`,
		`{"version":"0.1.0","id":"3f1c8a52-6a43-4f4e-9a57-1b0c2f6d8e11","timestamp":"2026-01-01T00:00:00Z","files":[{"path":"a","conversations":[{"ranges":[{"start_line":0,"end_line":1}]}]}]}`,
	}
	for _, b := range bad {
		if ledgertest.ValidateLine([]byte(b)) == nil {
			t.Errorf("schema accepted %s", b)
		}
	}
}
