package history

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// TestRevertOfASaveKeepsTheFilesMode: undoing an editor's save (a copy
// renamed over the file) brings the replaced file back with the mode the
// file had, which the save's copy carries (sed -i, editors), not 0644: a
// group-writable checkout must stay writable to its group.
func TestRevertOfASaveKeepsTheFilesMode(t *testing.T) {
	const one, two = "one\n", "two\n"
	f := newFixture(t)
	f.write("a", two)
	if err := os.Chmod(filepath.Join(f.src, "a"), 0o664); err != nil {
		t.Fatal(err)
	}
	f.keep(one)
	f.record(ledger.Change{Event: ledger.EventRename, Path: "a", FromPath: "tmp", PreHash: hashOf(t, one), PostHash: hashOf(t, two), Intent: "INT-001"})
	if _, applied, err := Run(f.src, f.source().Ledger, f.store, Request{Intent: "INT-001"}, func(ledger.Change) {}); err != nil || applied != 1 {
		t.Fatalf("run: %d applied: %v", applied, err)
	}
	st, err := os.Stat(filepath.Join(f.src, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.src, "a")); string(b) != one {
		t.Errorf("a = %q, want %q", b, one)
	}
	if st.Mode().Perm() != 0o664 {
		t.Errorf("a came back with mode %o, want the file's 0664", st.Mode().Perm())
	}
}
