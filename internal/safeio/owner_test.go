package safeio

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func statOwner(t *testing.T, path string) Owner {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Sys().(*syscall.Stat_t)
	return Owner{Uid: int(s.Uid), Gid: int(s.Gid), Mode: s.Mode & 0o7777}
}

// TestWritesKeepOwners: a file written over another keeps its owner,
// group and mode; a new one (or one replacing a symlink) takes its
// directory's owner and group and the mode asked for. Run as root, the
// owner is a user's; otherwise only the modes are checked.
func TestWritesKeepOwners(t *testing.T) {
	root := os.Geteuid() == 0
	uid, gid := os.Getuid(), os.Getgid()
	if root {
		uid, gid = 1000, 1000
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("old"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		os.Lchown(p, uid, gid)
		return p
	}
	os.Lchown(dir, uid, gid)
	os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	tests := []struct {
		name  string
		path  string
		write func(path string) error
		want  Owner
	}{
		{"Replace over a private file", write("private", 0o600), func(p string) error { return Replace(p, []byte("new"), 0o644) },
			Owner{uid, gid, 0o600}},
		{"Replace over a script", write("script", 0o755), func(p string) error { return Replace(p, []byte("new"), 0o644) },
			Owner{uid, gid, 0o755}},
		{"Replace of a new file", filepath.Join(dir, "new"), func(p string) error { return Replace(p, []byte("new"), 0o640) },
			Owner{uid, gid, 0o640}},
		{"Replace of a symlink", filepath.Join(dir, "link"), func(p string) error { return Replace(p, []byte("new"), 0o644) },
			Owner{uid, gid, 0o644}},
		{"WriteTemp, renamed over", write("policy", 0o664), func(p string) error {
			tmp, err := WriteTemp(p, []byte("new"), 0o644)
			if err != nil {
				return err
			}
			return os.Rename(tmp, p)
		}, Owner{uid, gid, 0o664}},
		{"MkdirAt", filepath.Join(dir, "sub"), func(p string) error {
			fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
			if err != nil {
				return err
			}
			defer syscall.Close(fd)
			return MkdirAt(fd, "sub", 0o750)
		}, Owner{uid, gid, 0o750}},
	}
	for _, tt := range tests {
		if err := tt.write(tt.path); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := statOwner(t, tt.path); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if b, _ := os.ReadFile("/etc/passwd"); string(b) == "new" {
		t.Fatal("a symlink was followed")
	}
}
