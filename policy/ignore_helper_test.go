package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// loadIgnore loads text as a source's .intentignore, through LoadIgnore
// as the daemon and the CLI do; a file with an error fails the test.
func loadIgnore(t testing.TB, text string) *Ignore {
	t.Helper()
	ig, _, err := loadIgnoreFile(t, ".intentignore", text)
	if err != nil {
		t.Fatalf("loading .intentignore %q: %v", text, err)
	}
	return ig
}

// loadIgnoreFile writes text to rel (one of IgnoreFiles) in a new source
// and loads that source's ignore files.
func loadIgnoreFile(t testing.TB, rel, text string) (*Ignore, []Diagnostic, error) {
	t.Helper()
	src := t.TempDir()
	p := filepath.Join(src, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return LoadIgnore(src)
}
