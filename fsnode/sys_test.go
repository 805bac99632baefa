package fsnode

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenBeneathNeverLeavesTheSource plants the symlinks an attacker
// would and checks that the daemon's path resolution refuses them all.
func TestOpenBeneathNeverLeavesTheSource(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "dir"), 0o755)
	os.WriteFile(filepath.Join(src, "dir/ok"), []byte("ok"), 0o644)
	os.Symlink(outside, filepath.Join(src, "escape"))
	os.Symlink("../../"+filepath.Base(outside), filepath.Join(src, "dir/rel"))
	os.Symlink("ok", filepath.Join(src, "dir/inside"))
	root, err := syscall.Open(src, unix.O_PATH|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(root)

	tests := []struct {
		rel  string
		ok   bool
		desc string
	}{
		{"dir/ok", true, "plain file"},
		{"escape/secret", false, "absolute symlink in a middle component"},
		{"escape", false, "symlink as the final component"},
		{"dir/rel", false, "relative symlink climbing out"},
		{"dir/inside", false, "even a symlink that stays inside is not followed"},
		{"../" + filepath.Base(outside) + "/secret", false, "dot-dot"},
		{filepath.Join(outside, "secret"), false, "absolute path"},
	}
	for _, tt := range tests {
		fd, err := openBeneath(root, tt.rel, syscall.O_RDONLY, 0)
		if err == nil {
			syscall.Close(fd)
		}
		if (err == nil) != tt.ok {
			t.Errorf("%s (%s): err = %v, want ok=%v", tt.desc, tt.rel, err, tt.ok)
		}
	}
	dirfd, err := openDir(root, "escape")
	if err == nil {
		syscall.Close(dirfd)
		t.Error("openDir followed a symlink")
	}
}

func TestSplitJoinRel(t *testing.T) {
	tests := []struct{ rel, dir, name string }{
		{"a", "", "a"},
		{"a/b", "a", "b"},
		{"a/b/c.txt", "a/b", "c.txt"},
	}
	for _, tt := range tests {
		d, n := splitRel(tt.rel)
		if d != tt.dir || n != tt.name || joinRel(d, n) != tt.rel {
			t.Errorf("splitRel(%q) = %q %q", tt.rel, d, n)
		}
	}
	// An event on a directory's own attributes names the directory and
	// no name in it: the path is the directory's.
	for _, tt := range []struct{ dir, name, want string }{
		{"", "", ""}, {"a", "", "a"}, {"a/b", "", "a/b"}, {"", "a", "a"},
	} {
		if got := joinRel(tt.dir, tt.name); got != tt.want {
			t.Errorf("joinRel(%q, %q) = %q, want %q", tt.dir, tt.name, got, tt.want)
		}
	}
}
