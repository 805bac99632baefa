package attribution

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

func TestRanges(t *testing.T) {
	tests := []struct {
		name      string
		pre, post string
		want      string // start-end pairs
	}{
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "[2-2]"},
		{"insert two", "a\nc\n", "a\nb1\nb2\nc\n", "[2-3]"},
		{"append", "a\n", "a\nb\n", "[2-2]"},
		{"delete only", "a\nb\nc\n", "a\nc\n", "[]"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n", "1\nX\n3\n4\n5\n6\nY\n8\n", "[2-2 7-7]"},
		{"adjacent merge", "1\n2\n3\n", "X\nY\n3\n", "[1-2]"},
		{"from empty", "", "a\nb\n", "[1-2]"},
		{"no final newline", "a\nb", "a\nc", "[2-2]"},
		{"insert at the start", "b\nc\n", "a\nb\nc\n", "[1-1]"},
		{"change the last line, no final newline", "a\nb\nc", "a\nb\nC", "[3-3]"},
		{"line grows at its end", "a\nb\nc\n", "a\nbx\nc\n", "[2-2]"},
		{"line grows at its start", "a\nb\nc\n", "a\nxb\nc\n", "[2-2]"},
		{"shared bytes across the edit", "ab\nab\n", "ab\nxab\nab\n", "[2-2]"},
		{"final newline added", "a\nb", "a\nb\n", "[2-2]"},
		{"to empty", "a\nb\n", "", "[]"},
		{"identical", "a\nb\n", "a\nb\n", "[]"},
	}
	for _, tt := range tests {
		got := Ranges([]byte(tt.pre), []byte(tt.post))
		s := "["
		for i, r := range got {
			if i > 0 {
				s += " "
			}
			s += fmt.Sprintf("%d-%d", r.StartLine, r.EndLine)
			if r.ContentHash != hashLines([]byte(tt.post), r.StartLine, r.EndLine) || len(r.ContentHash) != 71 {
				t.Errorf("%s: bad content hash", tt.name)
			}
		}
		s += "]"
		if s != tt.want {
			t.Errorf("%s: ranges %s, want %s", tt.name, s, tt.want)
		}
	}
	// A hunk's hash is the hash of exactly its lines.
	r := Ranges([]byte("a\nb\nc\n"), []byte("a\nB\nc\n"))
	if r[0].ContentHash != WholeFile([]byte("B\n"))[0].ContentHash {
		t.Error("hunk hash is not the hash of its lines")
	}
}

func TestClassify(t *testing.T) {
	goPre := "package p\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n"
	tests := []struct {
		name, path, pre, post string
		declared              ledger.MutationClass
		want                  ledger.MutationClass
	}{
		{"go comment only", "x.go", goPre, "package p\n\n// Add returns a+b.\n// It never fails.\nfunc Add(a, b int) int { return a + b }\n", "", ledger.ClassDocumentation},
		{"go whitespace only", "x.go", goPre, "package p\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n", "", ledger.ClassDocumentation},
		{"go code change", "x.go", goPre, "package p\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n", "", ledger.ClassEvolution},
		{"go string literal with //", "x.go", "package p\nvar s = \"a\"\n", "package p\nvar s = \"a // b\"\n", "", ledger.ClassEvolution},
		{"go token added at the end", "x.go", goPre, goPre + "var x = 1\n", "", ledger.ClassEvolution},
		{"go token removed at the end", "x.go", goPre + "var x = 1\n", goPre, "", ledger.ClassEvolution},
		{"go comment left open does not scan", "x.go", goPre, goPre + "/* open\n", "", ledger.ClassEvolution},
		{"yaml", "ci/config.yml", "a: 1\n", "a: 2\n", "", ledger.ClassConfiguration},
		{"dockerfile", "Dockerfile", "FROM a\n", "FROM b\n", "", ledger.ClassConfiguration},
		{"lock file", "package-lock.json", "{}", "{\"a\":1}", "", ledger.ClassConfiguration},
		{"markdown", "docs/guide.md", "a\n", "b\n", "", ledger.ClassDocumentation},
		{"python whitespace", "x.py", "def f():\n    return 1\n", "def f():\n    return  1\n", "", ledger.ClassDocumentation},
		{"python code", "x.py", "def f():\n    return 1\n", "def f():\n    return 2\n", "", ledger.ClassEvolution},
		{"declared refactor wins", "x.go", goPre, "package p\nfunc Sum(a, b int) int { return a + b }\n", ledger.ClassASTRefactor, ledger.ClassASTRefactor},
	}
	for _, tt := range tests {
		if got := Classify(tt.path, []byte(tt.pre), []byte(tt.post), tt.declared); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestClassByName(t *testing.T) {
	tests := []struct {
		name, path string
		declared   ledger.MutationClass
		want       ledger.MutationClass
	}{
		{"declared wins over the name", "ci/config.yml", ledger.ClassASTRefactor, ledger.ClassASTRefactor},
		{"configuration", "ci/config.yml", "", ledger.ClassConfiguration},
		{"documentation", "docs/guide.md", "", ledger.ClassDocumentation},
		{"code is evolution", "x.go", "", ledger.ClassEvolution},
		{"binary is evolution", "img/logo.png", "", ledger.ClassEvolution},
	}
	for _, tt := range tests {
		if got := ClassByName(tt.path, tt.declared); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestRangesOnlyDiffsTheMiddle checks that diffing only the lines between
// the shared head and tail finds the hunks a diff of the whole files
// finds, over random edits of files whose lines are all different (so
// there is one right answer).
func TestRangesOnlyDiffsTheMiddle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	next := 0
	line := func() string { next++; return fmt.Sprintf("line %d\n", next) }
	for i := range 2000 {
		var pre []string
		for range 1 + rng.IntN(40) {
			pre = append(pre, line())
		}
		post := append([]string(nil), pre...)
		for range 1 + rng.IntN(3) {
			at := rng.IntN(len(post) + 1)
			switch rng.IntN(3) {
			case 0: // insert
				post = append(post[:at], append([]string{line()}, post[at:]...)...)
			case 1: // delete
				if at < len(post) {
					post = append(post[:at], post[at+1:]...)
				}
			default: // replace
				if at < len(post) {
					post[at] = line()
				}
			}
		}
		a, b := []byte(strings.Join(pre, "")), []byte(strings.Join(post, ""))
		if rng.IntN(4) == 0 && len(b) > 0 { // sometimes no final newline
			b = b[:len(b)-1]
		}
		got, want := Ranges(a, b), diffRanges(a, b, 0, 0)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("case %d: ranges %v, a whole-file diff gives %v\npre:\n%s\npost:\n%s", i, got, want, a, b)
		}
	}
}
