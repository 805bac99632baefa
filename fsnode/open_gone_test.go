package fsnode_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestOpenOfAFileGoneFromTheSource: the kernel opens a file by an entry
// it still holds after the file left the source. An open that writes
// answers ESTALE, so the kernel looks the name up again and `> file`
// creates it anew, as on a disk; a read-only open answers ENOENT, which
// a reader racing a file renamed over and over can meet (ESTALE would
// reach it when the kernel's one retry races again).
func TestOpenOfAFileGoneFromTheSource(t *testing.T) {
	tests := []struct {
		name  string
		flags uint32
		want  fuse.Status
	}{
		{"read only", syscall.O_RDONLY, fuse.ENOENT},
		{"write", syscall.O_WRONLY, fuse.Status(syscall.ESTALE)},
		{"read only, truncating", syscall.O_RDONLY | syscall.O_TRUNC, fuse.Status(syscall.ESTALE)},
		{"read and write", syscall.O_RDWR, fuse.Status(syscall.ESTALE)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKernel(t, map[string]string{"src/a.go": "package a\n"})
			id := k.mustNode("src/a.go")
			if err := os.Remove(filepath.Join(k.src, "src/a.go")); err != nil {
				t.Fatal(err)
			}
			var out fuse.OpenOut
			st := k.raw.Open(nil, &fuse.OpenIn{InHeader: k.header(id), Flags: tt.flags}, &out)
			if st != tt.want {
				t.Fatalf("open %#o of a file gone from the source: %v, want %v", tt.flags, st, tt.want)
			}
		})
	}
}
