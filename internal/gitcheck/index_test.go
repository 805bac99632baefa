package gitcheck

import (
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

func TestIndexKeepsWhatJudgingNeeds(t *testing.T) {
	sha := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		records []ledger.Change
		ids     []string // record ids, "" for a fresh one
		path    string
		hash    string
		want    int // entries found
		len     int
	}{
		{"a sha256 content hash", []ledger.Change{{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: sha}}, []string{""}, "src/a.go", sha, 1, 1},
		{"another path", []ledger.Change{{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: sha}}, []string{""}, "src/b.go", sha, 0, 1},
		{"upper-case hex is another hash", []ledger.Change{{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: strings.ToUpper(sha)}}, []string{""}, "src/a.go", sha, 0, 1},
		{"a hash in another form", []ledger.Change{{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: "blake3:00"}}, []string{""}, "src/a.go", "blake3:00", 1, 1},
		{"the same uuid twice is one record", []ledger.Change{
			{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: sha},
			{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: sha}},
			[]string{"6f1c7b0e-3a43-4d0c-9a4b-2f1e0c9d8b7a", "6f1c7b0e-3a43-4d0c-9a4b-2f1e0c9d8b7a"}, "src/a.go", sha, 1, 1},
		{"the same other id twice is one record", []ledger.Change{
			{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: sha},
			{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: sha}},
			[]string{"rec-1", "rec-1"}, "src/a.go", sha, 1, 1},
		{"a uuid in capitals is not the same id", []ledger.Change{
			{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: sha},
			{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: sha}},
			[]string{"6f1c7b0e-3a43-4d0c-9a4b-2f1e0c9d8b7a", "6F1C7B0E-3A43-4D0C-9A4B-2F1E0C9D8B7A"}, "src/a.go", sha, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := NewIndex()
			var added []*ledger.Record
			for i, c := range tt.records {
				r := ledger.NewRecord(c, "test")
				if tt.ids[i] != "" {
					r.ID = tt.ids[i]
				}
				added = append(added, r)
				ix.Add(r)
			}
			got := ix.Written(tt.path, tt.hash)
			if len(got) != tt.want || ix.Len() != tt.len {
				t.Fatalf("Written = %d entries, Len = %d; want %d, %d", len(got), ix.Len(), tt.want, tt.len)
			}
			for i, e := range got {
				if e.ID != added[i].ID || e.Intent != "INT-001" || e.Event != ledger.EventWrite || e.Seq != i {
					t.Errorf("entry %d = %+v", i, e)
				}
			}
		})
	}
}
