package recordsource

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/internal/gitnotes"
	"github.com/intentfs/intentfs/ledger"
)

// noted makes a work tree whose ledger records one select and two
// creates, commits the files and puts the records in the notes; it
// returns the repository and the ledger's path.
func noted(t *testing.T) (*gitexec.Repo, string) {
	t.Helper()
	dir := t.TempDir()
	gittest.Init(t, dir)
	gittest.Commit(t, dir, "base", map[string]string{".gitignore": ".orchestration/\n"})
	path := filepath.Join(dir, ledger.FileName)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := ledger.OpenWriter(path, ledger.WriterOptions{Source: dir, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"a.go": "package a\n", "b.go": "package b\n"}
	w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventSelect, Intent: "INT-001"}, "test"))
	for p, content := range files {
		w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventCreate, Path: p, Intent: "INT-001",
			PostHash: gittest.Sha(content), Lines: strings.Count(content, "\n")}, "test"))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	gittest.Commit(t, dir, "work", files)
	repo, err := gitexec.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gitnotes.Sync(context.Background(), repo, path, "", ledger.Keep{}); err != nil {
		t.Fatal(err)
	}
	return repo, path
}

// TestAllCountsTheLocalLedgerOrTheNotes: the local ledger is
// authoritative where there is one; a clone without one counts the
// notes' whole chains unless told not to, and one with one counts them
// only when told to.
func TestAllCountsTheLocalLedgerOrTheNotes(t *testing.T) {
	repo, path := noted(t)
	yes, no := true, false
	fresh := filepath.Join(t.TempDir(), ledger.FileName) // a clone with no ledger of its own
	// The ledger holds its header, the select and the two creates.
	const records = 4
	tests := []struct {
		name       string
		ledgerPath string
		repo       *gitexec.Repo
		withNotes  *bool
		want       Counts
		// counted is the number of records passed to the sink.
		counted int
	}{
		{"own ledger, notes not asked for", path, repo, nil, Counts{Local: records, HasLedger: true}, records},
		{"own ledger outside git", path, nil, nil, Counts{Local: records, HasLedger: true}, records},
		{"own ledger, notes asked for: its own chain is not counted twice", path, repo, &yes, Counts{Local: records, HasLedger: true}, records},
		{"fresh clone counts the notes", fresh, repo, nil, Counts{Noted: records}, records},
		{"fresh clone told to leave the notes out", fresh, repo, &no, Counts{LeftOut: records}, 0},
		{"nothing at all", fresh, nil, nil, Counts{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var counted int
			n, err := All(context.Background(), tc.ledgerPath, tc.repo, tc.withNotes, nil,
				Sink{Counted: func(*ledger.Record) { counted++ }, Unsigned: func(*ledger.Record, string) { t.Error("unsigned without a trust file") }})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(n, tc.want) || counted != tc.counted {
				t.Errorf("counts %+v, %d counted; want %+v, %d", n, counted, tc.want, tc.counted)
			}
		})
	}
}

// TestNotedInTimeOrder: the notes' records come back oldest first, and
// QueryNotes filters them.
func TestNotedInTimeOrder(t *testing.T) {
	repo, _ := noted(t)
	recs, err := Noted(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 3 {
		t.Fatalf("%d records in the notes", len(recs))
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Timestamp < recs[i-1].Timestamp {
			t.Fatalf("record %d is older than the one before", i)
		}
	}
	var creates int
	if err := QueryNotes(context.Background(), repo, ledger.Filter{PathGlob: "a.go"}, func(*ledger.Record) error { creates++; return nil }); err != nil {
		t.Fatal(err)
	}
	if creates != 1 {
		t.Errorf("records of a.go: %d", creates)
	}
}

func TestHasLedger(t *testing.T) {
	_, path := noted(t)
	if !HasLedger(path) || HasLedger(filepath.Join(t.TempDir(), ledger.FileName)) {
		t.Error("HasLedger is wrong")
	}
}
