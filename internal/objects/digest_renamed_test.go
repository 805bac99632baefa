package objects

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Renamed carries a digest over a rename's new ctime, and only that.
func TestHashCacheRenamed(t *testing.T) {
	tests := []struct {
		name  string
		after func(st syscall.Stat_t) syscall.Stat_t
		known bool // whether the digest was known before
		want  bool
	}{
		{"renamed: ctime moved", func(st syscall.Stat_t) syscall.Stat_t { st.Ctim.Nsec++; return st }, true, true},
		{"written: mtime moved too", func(st syscall.Stat_t) syscall.Stat_t { st.Ctim.Nsec++; st.Mtim.Nsec++; return st }, true, false},
		{"grown", func(st syscall.Stat_t) syscall.Stat_t { st.Ctim.Nsec++; st.Size++; return st }, true, false},
		{"another file", func(st syscall.Stat_t) syscall.Stat_t { st.Ctim.Nsec++; st.Ino++; return st }, true, false},
		{"never hashed", func(st syscall.Stat_t) syscall.Stat_t { st.Ctim.Nsec++; return st }, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(p, []byte("a\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fd)
			c := NewHashCache()
			var before syscall.Stat_t
			if err := syscall.Fstat(fd, &before); err != nil {
				t.Fatal(err)
			}
			var d Digest
			if tt.known {
				if d, err = c.HashFd(fd); err != nil {
					t.Fatal(err)
				}
			}
			after := tt.after(before)
			c.Renamed(&before, &after)
			got, ok := c.Cached(&after)
			if ok != tt.want || (ok && got != d) {
				t.Fatalf("after the rename: %v %v, want known %v as %v", got, ok, tt.want, d)
			}
		})
	}
}
