package fsnode

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// BenchmarkReachDir measures what the walk costs a request made through
// a held handle (one openat2 and a close), at a few depths, beside the
// fstatat a lookup makes on that handle anyway.
func BenchmarkReachDir(b *testing.B) {
	src := b.TempDir()
	deep := "d1/d2/d3/d4/d5/d6"
	if err := os.MkdirAll(filepath.Join(src, deep), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, deep, "f"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	rootFd, err := syscall.Open(src, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Close(rootFd)
	for _, depth := range []int{1, 3, 6} {
		rel := strings.Join(strings.Split(deep, "/")[:depth], "/")
		b.Run("walk/depth="+string(rune('0'+depth)), func(b *testing.B) {
			for b.Loop() {
				if err := reachDir(&Root{rootFd: rootFd}, rel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	dirfd, err := openDir(rootFd, deep)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Close(dirfd)
	b.Run("fstatat-on-held-handle", func(b *testing.B) {
		var st syscall.Stat_t
		for b.Loop() {
			if err := fstatat(dirfd, "f", &st); err != nil {
				b.Fatal(err)
			}
		}
	})
}
