package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// WorldReadable writes a file that another uid can read: test temp
// directories are private to root.
func WorldReadable(t *testing.T, name, content string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "intentfs-public-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
