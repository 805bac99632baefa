package sidecar

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

var day = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func TestLessonsInsertion(t *testing.T) {
	tests := []struct {
		name, before, after string
	}{
		{"new file", "", "# Shared knowledge for agents working in this repository\n\n## Lessons Learned\n\n- 2026-11-22 [INT-001] use the fixtures\n"},
		{"no section", "# Notes\n\nkeep me\n", "# Notes\n\nkeep me\n\n## Lessons Learned\n\n- 2026-11-22 [INT-001] use the fixtures\n"},
		{"empty section before another", "# N\n\n## Lessons Learned\n\n## Rules\n\n- be nice\n",
			"# N\n\n## Lessons Learned\n\n- 2026-11-22 [INT-001] use the fixtures\n\n## Rules\n\n- be nice\n"},
		{"append after existing", "## Lessons Learned\n\n- 2026-01-01 [INT-000] old\n\n## Rules\n- r\n",
			"## Lessons Learned\n\n- 2026-01-01 [INT-000] old\n- 2026-11-22 [INT-001] use the fixtures\n\n## Rules\n- r\n"},
		{"section at end without newline", "## Lessons Learned\n- 2026-01-01 [INT-000] old",
			"## Lessons Learned\n- 2026-01-01 [INT-000] old\n- 2026-11-22 [INT-001] use the fixtures\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "CLAUDE.md")
			if tt.before != "" {
				os.WriteFile(p, []byte(tt.before), 0o644)
			}
			l := &Lessons{Path: p}
			if added, err := l.Add("INT-001", "use   the\nfixtures", day); err != nil || !added {
				t.Fatalf("Add = %v, %v", added, err)
			}
			b, _ := os.ReadFile(p)
			if string(b) != tt.after {
				t.Fatalf("got:\n%q\nwant:\n%q", b, tt.after)
			}
			if added, _ := l.Add("INT-001", "use the fixtures", day.Add(48*time.Hour)); added {
				t.Fatal("duplicate lesson added")
			}
		})
	}
	l := &Lessons{Path: filepath.Join(t.TempDir(), "x.md")}
	if _, err := l.Add("INT-001", "   ", day); err == nil {
		t.Error("empty lesson accepted")
	}
	if _, err := l.Add("INT-001", strings.Repeat("x", 5000), day); err == nil {
		t.Error("huge lesson accepted")
	}
}

func TestLessonsConcurrent(t *testing.T) {
	l := &Lessons{Path: filepath.Join(t.TempDir(), "CLAUDE.md")}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Add("INT-001", "lesson "+strings.Repeat("x", i), day); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(l.Path)
	if n := strings.Count(string(b), "- 2026-11-22 [INT-001] lesson"); n != 20 {
		t.Fatalf("%d lessons, want 20", n)
	}
}

func TestIntentMapKeepsHumanTextAndFollowsRenames(t *testing.T) {
	p := filepath.Join(t.TempDir(), "intent_map.md")
	human := "# My map\n\nHuman intro.\n\n## INT-001: api\n\nNotes the human wrote.\n"
	os.WriteFile(p, []byte(human), 0o644)
	m := &IntentMap{Path: p}
	m.Touch("INT-001", "api", "src/a.go", false, day)
	m.Touch("INT-001", "api", "src/b.go", false, day)
	m.Touch("INT-001", "api", "src/a.go", true, day)
	m.Touch("INT-001", "api", "src/a.go", true, day) // same day: one log line
	m.Touch("INT-002", "docs", "docs/x.md", false, day)
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	m.Move("src/b.go", "src/c.go")
	m.Remove("docs/x.md")
	m.Touch("INT-002", "docs", "docs/y.md", false, day)
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	got := string(b)
	for _, want := range []string{"# My map\n\nHuman intro.\n", "Notes the human wrote.", "- `src/a.go`", "- `src/c.go`", "- `docs/y.md`", "## INT-002: docs"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, gone := range []string{"src/b.go", "docs/x.md"} {
		if strings.Contains(got, gone) {
			t.Errorf("%s still listed:\n%s", gone, got)
		}
	}
	if n := strings.Count(got, "## INT-001"); n != 1 {
		t.Errorf("the human's INT-001 heading was duplicated:\n%s", got)
	}
	if n := strings.Count(got, "EVOLUTION 2026-11-22]_ `src/a.go`"); n != 1 {
		t.Errorf("%d evolution lines for src/a.go", n)
	}
	// A new process picks the managed sections up from the file.
	m2 := &IntentMap{Path: p}
	if files := m2.Files("INT-001"); len(files) != 2 || files[1] != "src/c.go" {
		t.Fatalf("reloaded files = %v", files)
	}
	m2.Touch("INT-001", "api", "src/d.go", false, day)
	m2.Flush()
	b, _ = os.ReadFile(p)
	if strings.Count(string(b), "intentfs:begin INT-001") != 1 || !strings.Contains(string(b), "src/d.go") {
		t.Fatalf("after reload:\n%s", b)
	}
}

func TestIntentMapListsEachPathOnce(t *testing.T) {
	type op struct {
		kind     string // touch, remove, move
		from, to string
	}
	tests := []struct {
		name string
		ops  []op
		want []string
	}{
		{"touched twice", []op{{"touch", "a", ""}, {"touch", "b", ""}, {"touch", "a", ""}}, []string{"a", "b"}},
		{"removed", []op{{"touch", "a", ""}, {"touch", "b", ""}, {"remove", "a", ""}}, []string{"b"}},
		{"removed then touched again", []op{{"touch", "a", ""}, {"touch", "b", ""}, {"remove", "a", ""}, {"touch", "a", ""}}, []string{"b", "a"}},
		{"renamed in place", []op{{"touch", "a", ""}, {"touch", "b", ""}, {"move", "a", "c"}}, []string{"c", "b"}},
		{"renamed over a listed path (sed -i)", []op{{"touch", "f", ""}, {"touch", "tmp", ""}, {"move", "tmp", "f"}}, []string{"f"}},
		{"directory renamed", []op{{"touch", "d/x", ""}, {"touch", "dx", ""}, {"touch", "d/y", ""}, {"move", "d", "e"}}, []string{"e/x", "dx", "e/y"}},
		{"unlisted path renamed", []op{{"touch", "a", ""}, {"move", "z", "y"}}, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &IntentMap{Path: filepath.Join(t.TempDir(), "intent_map.md")}
			for _, o := range tt.ops {
				switch o.kind {
				case "touch":
					m.Touch("INT-001", "x", o.from, false, day)
				case "remove":
					m.Remove(o.from)
				case "move":
					m.Move(o.from, o.to)
				}
			}
			if got := m.Files("INT-001"); !slices.Equal(got, tt.want) {
				t.Fatalf("files %v, want %v", got, tt.want)
			}
		})
	}
}

// A tree removed file by file is compacted away, and what is left stays
// listed in order.
func TestIntentMapManyRemovals(t *testing.T) {
	m := &IntentMap{Path: filepath.Join(t.TempDir(), "intent_map.md")}
	for i := range 10000 {
		m.Touch("INT-001", "x", fmt.Sprintf("f%05d", i), false, day)
	}
	for i := range 9998 {
		m.Remove(fmt.Sprintf("f%05d", i))
	}
	if got := m.Files("INT-001"); !slices.Equal(got, []string{"f09998", "f09999"}) {
		t.Fatalf("files %v", got)
	}
	if n := len(m.sections["INT-001"].files); n > 64 {
		t.Fatalf("%d entries kept for 2 listed files", n)
	}
}

// A flush that cannot write keeps the changes for the next one.
func TestIntentMapFlushRetriesAfterFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	m := &IntentMap{Path: filepath.Join(dir, "intent_map.md")}
	m.Touch("INT-001", "x", "src/a.go", false, day)
	if err := m.Flush(); err == nil {
		t.Fatal("flush into a missing directory succeeded")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(m.Path); err != nil || !strings.Contains(string(b), "src/a.go") {
		t.Fatalf("after retry: %v\n%s", err, b)
	}
}

// TestIntentMapNamesCannotForgeSections touches files whose names hold
// newlines, markers and escapes: the map keeps one block per intent, no
// line a name wrote, and reads every name back exactly.
func TestIntentMapNamesCannotForgeSections(t *testing.T) {
	p := filepath.Join(t.TempDir(), "intent_map.md")
	names := []string{
		"x\n## INT-002: forged\n- `stolen`",
		"y\n<!-- intentfs:end INT-001 -->\n<!-- intentfs:begin INT-002 -->",
		"esc\x1b[2J", "caf\xe9\xff", `back\slash`,
	}
	m := &IntentMap{Path: p}
	for _, n := range names {
		m.Touch("INT-001", "api", n, true, day)
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	doc, _ := os.ReadFile(p)
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "## INT-002") || strings.HasPrefix(line, "<!-- intentfs:begin INT-002") || strings.Contains(line, "\x1b") || !utf8.ValidString(line) {
			t.Errorf("a name wrote the line %q:\n%s", line, doc)
		}
	}
	if n := strings.Count("\n"+string(doc), "\n<!-- intentfs:"); n != 2 {
		t.Errorf("%d marker lines, want 2 (one block):\n%s", n, doc)
	}
	back := &IntentMap{Path: p}
	if got := back.Files("INT-001"); !slices.Equal(got, names) {
		t.Errorf("read back %q, want %q", got, names)
	}
}

// TestLessonsFileIsBounded adds lessons until the file is full: the file
// stays under its bound and the refusal says what to do.
func TestLessonsFileIsBounded(t *testing.T) {
	l := &Lessons{Path: filepath.Join(t.TempDir(), "CLAUDE.md")}
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = l.Add("INT-001", strings.Repeat("lesson "+strconv.Itoa(i)+" ", 300), day)
	}
	if err == nil || !strings.Contains(err.Error(), "edit it to make room") {
		t.Fatalf("no refusal after 1000 lessons of 3 KiB: %v", err)
	}
	st, _ := os.Stat(l.Path)
	if st.Size() > MaxLessonsFileBytes {
		t.Errorf("lessons file is %d bytes, bound %d", st.Size(), MaxLessonsFileBytes)
	}
}

// TestIntentMapIsBounded touches more files than a block lists: the file
// stays bounded and says how many more there are.
func TestIntentMapIsBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "intent_map.md")
	m := &IntentMap{Path: p}
	for i := 0; i < maxListedFiles+500; i++ {
		m.Touch("INT-001", "api", "src/f"+strconv.Itoa(i), false, day)
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	doc, _ := os.ReadFile(p)
	if n := strings.Count(string(doc), "\n- `"); n != maxListedFiles {
		t.Errorf("%d files listed, want %d", n, maxListedFiles)
	}
	if !strings.Contains(string(doc), "and 500 more files") {
		t.Errorf("the block does not say how many more files there are")
	}
}
