package policy

import (
	"errors"
	"testing"
)

func TestScopeMatching(t *testing.T) {
	tests := []struct {
		patterns []string
		path     string
		in       bool
		ancestor bool
		subtree  bool
	}{
		{[]string{"src/api/**"}, "src/api/x.go", true, false, true},
		{[]string{"src/api/**"}, "src/api", true, true, true},
		{[]string{"src/api/**"}, "src", false, true, false},
		{[]string{"src/api/**"}, "src/apix", false, false, false},
		{[]string{"src/*.go"}, "src/a.go", true, false, false},
		{[]string{"src/*.go"}, "src/sub/a.go", false, false, false},
		{[]string{"src/*.go"}, "src", false, true, false},
		{[]string{"**/*.md"}, "a/b/c.md", true, false, false},
		{[]string{"docs/api.md"}, "docs", false, true, false},
		{[]string{"docs/api.md"}, "docs/api.md", true, false, false},
		{[]string{"**"}, "anything/at/all", true, false, true},
		{[]string{"a/**", "b/**"}, "b/x", true, false, true},
		// Not a plain prefix: a name below can fall outside (a/b/_secret).
		{[]string{"a/**/[!_]*"}, "a/b", true, false, false},
		{[]string{"{a,b}/**"}, "a/x", true, false, false},
		{[]string{"src/**"}, "", false, false, false},
		{[]string{"**"}, "", true, false, true},
	}
	for _, tt := range tests {
		s := newScopeSet(tt.patterns)
		if got := s.matches(tt.path); got != tt.in {
			t.Errorf("%v matches %q = %v, want %v", tt.patterns, tt.path, got, tt.in)
		}
		if got := s.isScopeAncestor(tt.path); got != tt.ancestor {
			t.Errorf("%v isScopeAncestor %q = %v, want %v", tt.patterns, tt.path, got, tt.ancestor)
		}
		if got := s.prefixCovers(tt.path); got != tt.subtree {
			t.Errorf("%v prefixCovers %q = %v, want %v", tt.patterns, tt.path, got, tt.subtree)
		}
	}
}

func TestIgnoreMatching(t *testing.T) {
	ig, diags, err := loadIgnoreFile(t, ".intentignore", "# caches\nnode_modules/\n*.log\n!keep.log\n/build\ndist/**/*.map\n\\#literal\n")
	if err != nil || len(diags) != 0 {
		t.Fatalf("err %v, diags = %v", err, diags)
	}
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"node_modules", true, true},
		{"node_modules", false, false},
		{"web/node_modules/x/y.js", false, true},
		{"a.log", false, true},
		{"deep/b.log", false, true},
		{"keep.log", false, false},
		{"build", true, true},
		{"build/out.o", false, true},
		{"sub/build/out.o", false, false},
		{"dist/x/a.map", false, true},
		{"dist/a.js", false, false},
		{"#literal", false, true},
		{"src/main.go", false, false},
	}
	for _, tt := range tests {
		if got := ig.Match(tt.path, tt.isDir); got != tt.want {
			t.Errorf("Match(%q, dir=%v) = %v, want %v", tt.path, tt.isDir, got, tt.want)
		}
	}
}

func TestIgnoreBadPattern(t *testing.T) {
	const file = ".orchestration/.intentignore"
	ig, diags, err := loadIgnoreFile(t, file, "ok\nsrc/[\n")
	if len(diags) != 1 || diags[0].Line != 2 || diags[0].File != file || diags[0].Severity != SevError {
		t.Fatalf("diags = %v, want one error on line 2 of %s", diags, file)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || ig != nil {
		t.Fatalf("a bad pattern loaded: ignore %v, err %v; want no ignore and a *ValidationError", ig, err)
	}
}
