package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeChain(t *testing.T, n int) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent_trace.jsonl")
	w := openTestWriter(t, path, nil)
	for i := range n {
		w.Append(NewRecord(Change{Event: EventCreate, Path: fmt.Sprintf("f%d", i), Intent: "INT-001", PostHash: EmptyHash}, "t"))
	}
	w.Close()
	b, _ := os.ReadFile(path)
	return path, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestVerifyDetectsTampering(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(lines []string) []string
		kind   string
		line   int
	}{
		{"intact", func(l []string) []string { return l }, "", 0},
		{"edit a field", func(l []string) []string {
			l[3] = strings.Replace(l[3], `"path":"f2"`, `"path":"fX"`, 1)
			return l
		}, ProblemChain, 5},
		{"delete a line", func(l []string) []string { return append(l[:2], l[3:]...) }, ProblemChain, 3},
		{"reorder two lines", func(l []string) []string { l[2], l[3] = l[3], l[2]; return l }, ProblemChain, 3},
		{"insert a line", func(l []string) []string {
			return append(l[:3], append([]string{l[1]}, l[3:]...)...)
		}, ProblemChain, 4},
		{"garbage line", func(l []string) []string { l[4] = "not json"; return l }, ProblemParse, 5},
		{"invalid record", func(l []string) []string {
			l[4] = strings.Replace(l[4], `"version":"0.1.0"`, `"version":"one"`, 1)
			return l
		}, ProblemRecord, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, lines := writeChain(t, 6)
			lines = tt.tamper(lines)
			os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
			rep := Verify(VerifyOptions{Ledger: path})
			if tt.kind == "" {
				if !rep.OK() || rep.Records != 7 {
					t.Fatalf("intact ledger: %d records, %v", rep.Records, rep.Problems)
				}
				return
			}
			if rep.OK() {
				t.Fatal("tampering not detected")
			}
			var found bool
			for _, p := range rep.Problems {
				if p.Kind == tt.kind && p.Line == tt.line {
					found = true
				}
			}
			if !found {
				t.Fatalf("want %s at line %d, got %v", tt.kind, tt.line, rep.Problems)
			}
		})
	}
}

func TestVerifyChecksTheTree(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, ".orchestration"), 0o755)
	path := filepath.Join(src, FileName)
	w := openTestWriter(t, path, nil)
	rec := func(c Change) { w.Append(NewRecord(c, "t")) }
	write := func(p, s string) string {
		os.WriteFile(filepath.Join(src, p), []byte(s), 0o644)
		return LineHash([]byte(s))
	}
	rec(Change{Event: EventCreate, Path: "same.txt", PostHash: write("same.txt", "same")})
	rec(Change{Event: EventCreate, Path: "edited.txt", PostHash: write("edited.txt", "v1")})
	rec(Change{Event: EventCreate, Path: "gone.txt", PostHash: write("gone.txt", "x")})
	rec(Change{Event: EventCreate, Path: "a.txt", PostHash: write("a.txt", "a")})
	rec(Change{Event: EventRename, Path: "b.txt", FromPath: "a.txt", PostHash: LineHash([]byte("a"))})
	os.Rename(filepath.Join(src, "a.txt"), filepath.Join(src, "b.txt"))
	w.Close()
	write("edited.txt", "v2 behind the back")
	os.Remove(filepath.Join(src, "gone.txt"))
	write("sneaky.txt", "never traced")
	rep := Verify(VerifyOptions{Ledger: path, Source: src})
	got := map[string]string{}
	for _, p := range rep.Problems {
		got[p.Path] = p.Kind
	}
	want := map[string]string{"edited.txt": ProblemChanged, "gone.txt": ProblemDeleted, "sneaky.txt": ProblemUntraced}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("problems %v, want %v", rep.Problems, want)
	}
	if rep.Tracked != 4 {
		t.Fatalf("tracked %d", rep.Tracked)
	}
}

// TestVerifyTakesAnAccept: after a human's accept records a file's
// content (or its absence) as it is now, verify finds nothing wrong with
// it; a later change behind the ledger's back is found again.
func TestVerifyTakesAnAccept(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, ".orchestration"), 0o755)
	path := filepath.Join(src, FileName)
	write := func(p, s string) string {
		os.WriteFile(filepath.Join(src, p), []byte(s), 0o644)
		return HashBytes([]byte(s))
	}
	w := openTestWriter(t, path, nil)
	w.Append(NewRecord(Change{Event: EventCreate, Path: "edited.txt", PostHash: write("edited.txt", "v1")}, "t"))
	w.Append(NewRecord(Change{Event: EventCreate, Path: "gone.txt", PostHash: write("gone.txt", "x")}, "t"))
	w.Append(NewRecord(Change{Event: EventCreate, Path: "later.txt", PostHash: write("later.txt", "l1")}, "t"))
	h := write("edited.txt", "v2 by the human")
	os.Remove(filepath.Join(src, "gone.txt"))
	w.Append(NewRecord(Change{Event: EventAccept, Path: "edited.txt", PostHash: h}, "t"))
	w.Append(NewRecord(Change{Event: EventAccept, Path: "gone.txt"}, "t"))
	w.Append(NewRecord(Change{Event: EventAccept, Path: "new.txt", PostHash: write("new.txt", "new")}, "t"))
	w.Close()
	if rep := Verify(VerifyOptions{Ledger: path, Source: src}); !rep.OK() {
		t.Fatalf("after accepting: %v", rep.Problems)
	}
	write("edited.txt", "v3 behind the back")
	rep := Verify(VerifyOptions{Ledger: path, Source: src})
	if len(rep.Problems) != 1 || rep.Problems[0].Path != "edited.txt" || rep.Problems[0].Kind != ProblemChanged {
		t.Fatalf("a change after the accept: %v", rep.Problems)
	}
}
