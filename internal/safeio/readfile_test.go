package safeio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFileLoadsOnlyBoundedRegularFiles(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(outside, []byte("SECRET"), 0o600))
	must(os.WriteFile(filepath.Join(root, "ok"), []byte("fine\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "big"), make([]byte, 101), 0o644))
	must(os.Symlink(outside, filepath.Join(root, "link")))
	must(os.Symlink("/dev/zero", filepath.Join(root, "zero")))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(os.Mkdir(filepath.Join(root, "real"), 0o755))
	must(os.WriteFile(filepath.Join(root, "real", "f"), []byte("x"), 0o644))
	must(os.Symlink("real", filepath.Join(root, "dirlink")))

	tests := []struct {
		rel     string
		want    string // content, or a substring of the error
		wantErr bool
	}{
		{"ok", "fine\n", false},
		{"big", "more than the 100 allowed", true},
		{"link", "symlink", true},
		{"zero", "symlink", true},
		{"fifo", "not a regular file", true},
		{"dirlink/f", "symlink", true},
		{"real", "not a regular file", true},
		{"../escape", "reading ../escape", true},
	}
	for _, tt := range tests {
		done := make(chan struct{})
		var got []byte
		var err error
		go func() { got, err = ReadFile(root, tt.rel, 100); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFile blocked", tt.rel)
		}
		switch {
		case tt.wantErr && err == nil:
			t.Errorf("%s: read %q, want an error", tt.rel, got)
		case tt.wantErr && (!strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "SECRET")):
			t.Errorf("%s: error %q, want it to say %q", tt.rel, err, tt.want)
		case !tt.wantErr && (err != nil || string(got) != tt.want):
			t.Errorf("%s: %q, %v", tt.rel, got, err)
		}
	}
	if _, err := ReadFile(root, "missing", 100); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
	if _, err := ReadFile(root, "big", 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("big file: %v, want ErrTooLarge", err)
	}
}
