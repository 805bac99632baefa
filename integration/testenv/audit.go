package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// TreeBytes maps every regular file below root (outside .orchestration
// and .git) to its content, and every directory to "dir".
func TreeBytes(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == ".orchestration" || rel == ".git" {
			return filepath.SkipDir
		}
		switch {
		case rel == ".":
		case info.IsDir():
			out[rel] = "dir"
		case info.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}
