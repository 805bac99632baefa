package sidecar

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// MoveFile follows a file's rename as Move does, and leaves what is listed
// below a path of the same name alone (a file has nothing below it).
func TestIntentMapMoveFile(t *testing.T) {
	tests := []struct {
		name     string
		touched  []string
		from, to string
		want     []string
	}{
		{"renamed in place", []string{"a", "b"}, "a", "c", []string{"c", "b"}},
		{"renamed over a listed path (an editor's save)", []string{"f", "f.tmp"}, "f.tmp", "f", []string{"f"}},
		{"unlisted path renamed", []string{"a"}, "z", "y", []string{"a"}},
		{"only the path itself", []string{"d", "d/x"}, "d", "e", []string{"e", "d/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &IntentMap{Path: filepath.Join(t.TempDir(), "intent_map.md")}
			for _, p := range tt.touched {
				m.Touch("INT-001", "x", p, false, day)
			}
			m.MoveFile(tt.from, tt.to)
			if got := m.Files("INT-001"); !slices.Equal(got, tt.want) {
				t.Fatalf("files %v, want %v", got, tt.want)
			}
		})
	}
}

// An editor saves by creating a temporary file and renaming it over the
// original: however many saves, the section keeps an entry per listed
// path (within the compaction bound), not one per save.
func TestIntentMapSavesStayBounded(t *testing.T) {
	for _, move := range []struct {
		name string
		fn   func(m *IntentMap, from, to string)
	}{{"Move", (*IntentMap).Move}, {"MoveFile", (*IntentMap).MoveFile}} {
		t.Run(move.name, func(t *testing.T) {
			m := &IntentMap{Path: filepath.Join(t.TempDir(), "intent_map.md")}
			for i := range 10000 {
				f := fmt.Sprintf("src/f%d.go", i%3)
				m.Touch("INT-001", "x", f+".tmp", false, day)
				move.fn(m, f+".tmp", f)
				m.Touch("INT-001", "x", f, true, day)
			}
			if got := m.Files("INT-001"); !slices.Equal(got, []string{"src/f0.go", "src/f1.go", "src/f2.go"}) {
				t.Fatalf("files %v", got)
			}
			if n := len(m.sections["INT-001"].files); n > 64 {
				t.Fatalf("%d entries kept for 3 listed files after 10,000 saves", n)
			}
		})
	}
}

// Flush copies under the map's lock only what it writes: the first
// maxListedFiles paths of a section and the count of the rest, so a file
// operation's Touch never waits for a copy of every path a session
// touched.
func TestIntentMapSnapshotCopiesWhatItWrites(t *testing.T) {
	m := &IntentMap{Path: filepath.Join(t.TempDir(), "intent_map.md")}
	const touched = 5 * maxListedFiles
	for i := range touched {
		m.Touch("INT-001", "x", fmt.Sprintf("f%05d", i), false, day)
	}
	m.Remove("f00000")
	m.mu.Lock()
	snap := m.snapshot()
	m.mu.Unlock()
	s := snap.sections["INT-001"]
	if len(s.files) != maxListedFiles || s.listed != touched-1 {
		t.Fatalf("snapshot holds %d paths and counts %d, want %d and %d", len(s.files), s.listed, maxListedFiles, touched-1)
	}
	if s.files[0] != "f00001" || s.files[maxListedFiles-1] != fmt.Sprintf("f%05d", maxListedFiles) {
		t.Fatalf("snapshot paths run %s..%s", s.files[0], s.files[len(s.files)-1])
	}
}
