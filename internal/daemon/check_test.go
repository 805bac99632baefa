package daemon

import "testing"

func TestScopeProbe(t *testing.T) {
	for _, c := range []struct{ pat, rel, op string }{
		{"README.md", "README.md", "open_write"},
		{"src/a/b.go", "src/a/b.go", "open_write"},
		{"src/**", "src/intentfs-probe", "create"},
		{"src/*.go", "src/intentfs-probe", "create"},
		{"**", "intentfs-probe", "create"},
		{"*.md", "intentfs-probe", "create"},
		{"docs/{a,b}/*.md", "docs/intentfs-probe", "create"},
	} {
		if rel, op := scopeProbe(c.pat); rel != c.rel || op != c.op {
			t.Errorf("scopeProbe(%q) = %q %q, want %q %q", c.pat, rel, op, c.rel, c.op)
		}
	}
}
