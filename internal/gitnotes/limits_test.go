package gitnotes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitexec/gittest"
)

// plantNote gives commit a note of n tiny records, as anyone who can
// write the notes ref (the agent in a mount) can.
func plantNote(t *testing.T, dir, commit, prefix string, n int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"%s%07d"}`+"\n", prefix, i)
	}
	f := filepath.Join(t.TempDir(), "note")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "notes", "--ref="+Ref, "add", "-f", "-F", f, commit)
}

// TestReadWithinCaps: a note over a cap is skipped whole and reported
// with the cap and the variable that raises it; notes within the caps
// are read.
func TestReadWithinCaps(t *testing.T) {
	dir := t.TempDir()
	gittest.Init(t, dir)
	first := gittest.Commit(t, dir, "one", map[string]string{"a": "1\n"})
	second := gittest.Commit(t, dir, "two", map[string]string{"b": "2\n"})
	plantNote(t, dir, first, "a", 10)
	plantNote(t, dir, second, "b", 30)
	c := newClone(t, dir)
	for _, tc := range []struct {
		name    string
		lim     Limits
		records int
		skipped string // the cap named, "" for none
	}{
		{"within", Limits{NoteRecords: 100, Records: 100, Bytes: 1 << 20}, 40, ""},
		{"a note over its cap", Limits{NoteRecords: 20, Records: 100, Bytes: 1 << 20}, 10, EnvMaxNoteRecords},
		{"over the total records", Limits{NoteRecords: 100, Records: 25, Bytes: 1 << 20}, 10, EnvMaxRecords},
		{"over the total bytes", Limits{NoteRecords: 100, Records: 100, Bytes: 400}, 10, EnvMaxBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := ReadWithin(context.Background(), c.repo, tc.lim)
			if err != nil {
				t.Fatal(err)
			}
			if len(set.Lines) != tc.records {
				t.Errorf("read %d records, want %d", len(set.Lines), tc.records)
			}
			switch {
			case tc.skipped == "" && len(set.Skipped) != 0:
				t.Errorf("skipped %v within the caps", set.Skipped)
			case tc.skipped != "" && (len(set.Skipped) != 1 || !strings.Contains(set.Skipped[0], tc.skipped) || !strings.HasPrefix(set.Skipped[0], second)):
				t.Errorf("skipped %v, want the note of %s naming %s", set.Skipped, second, tc.skipped)
			}
			if tc.skipped != "" && VerifyChains(set).OK() {
				t.Error("verify passes notes a cap left out")
			}
		})
	}
}
