package safeio

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		setup    func(p string)
		wantMode os.FileMode
	}{
		{"new file gets the default mode", func(string) {}, 0o644},
		{"an existing file keeps its mode", func(p string) { os.WriteFile(p, []byte("old"), 0o640) }, 0o640},
		{"a symlink is replaced, not followed", func(p string) { os.Symlink(target, p) }, 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			tt.setup(p)
			if err := Replace(p, []byte("new\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			st, err := os.Lstat(p)
			if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != tt.wantMode {
				t.Fatalf("after Replace: %v %v, want a regular file with mode %v", st.Mode(), err, tt.wantMode)
			}
			if b, _ := os.ReadFile(p); string(b) != "new\n" {
				t.Fatalf("content %q", b)
			}
		})
	}
	if b, _ := os.ReadFile(target); string(b) != "kept\n" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
}
