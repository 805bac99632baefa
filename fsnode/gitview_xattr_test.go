package fsnode

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGitViewXattrsOfEachPath: the kernel reads a directory's POSIX ACL
// (an extended attribute) to check a caller who does not own it, so root
// in the mount of a worktree owned by the agent's user reads .git's before
// any lookup below it. The view's .git is the git directory's own handle,
// reached with no name: reading and listing its attributes must reach that
// directory, as for any other path, not fail as if .git were missing.
func TestGitViewXattrsOfEachPath(t *testing.T) {
	r, common, gitDir := worktreeRoot(t)
	tests := []struct {
		rel, source string
	}{
		{".git", gitDir},
		{".git/HEAD", filepath.Join(gitDir, "HEAD")},
		{".git/refs", filepath.Join(common, "refs")},
		{".git/config", filepath.Join(common, "config")},
		{"src", filepath.Join(r.source, "src")},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			if err := unix.Lsetxattr(tt.source, "user.intentfs-test", []byte(tt.rel), 0); err != nil {
				if errors.Is(err, syscall.ENOTSUP) {
					t.Skipf("no user.* extended attributes on %s", tt.source)
				}
				t.Fatal(err)
			}
			buf := make([]byte, 256)
			var n int
			errno := r.withRouted(tt.rel, func(dirfd int, name string) (err error) {
				n, err = getxattrat(dirfd, name, "user.intentfs-test", buf)
				return err
			})
			if errno != 0 || string(buf[:n]) != tt.rel {
				t.Errorf("getxattrat of %s = %q, %v; want %q", tt.rel, buf[:n], errno, tt.rel)
			}
			errno = r.withRouted(tt.rel, func(dirfd int, name string) (err error) {
				n, err = listxattrat(dirfd, name, buf)
				return err
			})
			if errno != 0 || !strings.Contains(string(buf[:n]), "user.intentfs-test\x00") {
				t.Errorf("listxattrat of %s = %q, %v; want user.intentfs-test listed", tt.rel, buf[:n], errno)
			}
		})
	}
}
