package scopesuggest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/policy"
)

func TestSuggest(t *testing.T) {
	tests := []struct {
		name    string
		paths   []string
		globs   []string
		skipped []string
	}{
		{"nothing", nil, nil, nil},
		{"one file", []string{"src/api/h.go"}, []string{"src/api/h.go"}, nil},
		{"repeats count once", []string{"docs/a.md", "docs/a.md"}, []string{"docs/a.md"}, nil},
		{"files of one extension", []string{"docs/a.md", "docs/b.md", "docs/c.md"}, []string{"docs/*.md"}, nil},
		{"files of mixed extensions", []string{"docs/a.md", "docs/b.txt"}, []string{"docs/*"}, nil},
		{"files without an extension", []string{"bin/run", "bin/build"}, []string{"bin/*"}, nil},
		{"dotfiles are not an extension", []string{"cfg/.env", "cfg/.envrc"}, []string{"cfg/*"}, nil},
		{"spread over subdirectories", []string{"src/api/a.go", "src/db/b.go"}, []string{"src/**"}, nil},
		{"a file next to a subdirectory", []string{"src/main.go", "src/api/a.go"}, []string{"src/**"}, nil},
		{"one subdirectory is descended", []string{"a/b/c/x.go", "a/b/c/y.go"}, []string{"a/b/c/*.go"}, nil},
		{"root files are named, never *", []string{"README.md", "main.go", "go.mod"}, []string{"README.md", "go.mod", "main.go"}, nil},
		{"never ** at the root", []string{"a/x", "b/y", "c/z", "top"}, []string{"a/x", "b/y", "c/z", "top"}, nil},
		{"a directory made and filled", []string{"docs/new", "docs/new/a.md", "docs/new/b.md"}, []string{"docs/new", "docs/new/*.md"}, nil},
		{"governance paths are skipped",
			[]string{".orchestration/active_intents.yaml", ".intentignore", ".git/hooks/pre-commit", "sub/.git/config", "src/a.go"},
			[]string{"src/a.go"}, []string{".git/hooks/pre-commit", ".intentignore", ".orchestration/active_intents.yaml", "sub/.git/config"}},
		{"not workspace-relative", []string{"/etc/passwd", "../x", "src/a.go"}, []string{"src/a.go"}, []string{"../x", "/etc/passwd"}},
		{"glob characters are escaped", []string{"odd/a*b.go", "odd/[x].txt"}, []string{"odd/*"}, nil},
		{"an escaped literal", []string{"odd/a*b.go"}, []string{`odd/a\*b.go`}, nil},
		{"a mixed session", []string{"src/api/h.go", "src/api/h_test.go", "docs/api.md", "docs/guide.md", "Makefile"},
			[]string{"Makefile", "docs/*.md", "src/api/*.go"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Suggest(tt.paths)
			if !slices.Equal(got.Globs, tt.globs) || !slices.Equal(got.Skipped, tt.skipped) {
				t.Fatalf("Suggest(%q) = %q skipped %q, want %q skipped %q", tt.paths, got.Globs, got.Skipped, tt.globs, tt.skipped)
			}
			checkCovers(t, got, tt.paths)
		})
	}
}

// checkCovers parses the globs as an intent's owned_scope, as the daemon
// would, and checks that they are valid and cover every path not skipped
// (a directory also counts as covered where a mkdir of it is allowed).
func checkCovers(t *testing.T, got Result, paths []string) {
	t.Helper()
	if len(got.Globs) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("active_intents:\n  - id: INT-001\n    name: suggested\n    status: IN_PROGRESS\n    owned_scope:\n")
	for _, g := range got.Globs {
		fmt.Fprintf(&b, "      - %q\n", g)
		if g == "**" || strings.HasPrefix(g, "*") {
			t.Errorf("glob %q covers the workspace root", g)
		}
	}
	in, _, err := policy.ParseIntents("p.yaml", []byte(b.String()))
	if err != nil {
		t.Fatalf("the proposal is not a valid scope: %v", err)
	}
	snap := &policy.Snapshot{Intents: in}
	for _, p := range paths {
		if slices.Contains(got.Skipped, p) {
			continue
		}
		d := snap.Decide(policy.Request{Op: policy.OpCreate, Path: p, Intent: "INT-001"})
		if !d.Allow {
			t.Errorf("%s is not covered by %q: %s", p, got.Globs, d.Reason)
		}
	}
}
