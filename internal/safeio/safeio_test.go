package safeio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadPrefix(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, rel string
		limit     int
		want      string
		wantErr   bool
	}{
		{name: "all of a file under a huge limit", rel: "f", limit: 1<<31 - 1, want: "hello\n"},
		{name: "a prefix", rel: "f", limit: 3, want: "hel"},
		{name: "exactly the size", rel: "f", limit: 6, want: "hello\n"},
		{name: "an empty file", rel: "empty", limit: 10, want: ""},
		{name: "a symlink is not followed", rel: "link", limit: 10, wantErr: true},
		{name: "a directory", rel: "d", limit: 10, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadPrefix(root, tt.rel, tt.limit)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if cap(got) > len(tt.want)+1 {
				t.Errorf("buffer of %d bytes for %d bytes read", cap(got), len(got))
			}
		})
	}
	// A file larger than the first read still comes back whole.
	big := strings.Repeat("x", 1<<20)
	if err := os.WriteFile(filepath.Join(root, "big"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadPrefix(root, "big", 1<<31-1); err != nil || string(got) != big {
		t.Fatalf("big file: %d bytes, %v", len(got), err)
	}
}
