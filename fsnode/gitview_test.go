package fsnode

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/gitlayout"
)

// layOutWorktree lays out, below a temporary directory, a repository
// (its .git is common) with a linked worktree wt whose git directory is
// gitDir, holding a file of each place of the view.
func layOutWorktree(t *testing.T) (wt, common, gitDir string) {
	t.Helper()
	base := t.TempDir()
	common = filepath.Join(base, "repo", ".git")
	gitDir = filepath.Join(common, "worktrees", "wt")
	wt = filepath.Join(base, "wt")
	files := map[string]string{
		filepath.Join(common, "HEAD"):                        "ref: refs/heads/main\n",
		filepath.Join(common, "config"):                      "[core]\n",
		filepath.Join(common, "packed-refs"):                 "",
		filepath.Join(common, "refs", "heads", "main"):       "",
		filepath.Join(common, "logs", "refs", "heads", "wt"): "",
		filepath.Join(common, "objects", "ab", "cd"):         "",
		filepath.Join(common, "hooks", "pre-commit.sample"):  "",
		filepath.Join(common, "info", "exclude"):             "",
		filepath.Join(gitDir, "HEAD"):                        "ref: refs/heads/wt\n",
		filepath.Join(gitDir, "index"):                       "",
		filepath.Join(gitDir, "commondir"):                   "../..\n",
		filepath.Join(gitDir, "gitdir"):                      filepath.Join(wt, ".git") + "\n",
		filepath.Join(gitDir, "logs", "HEAD"):                "",
		filepath.Join(gitDir, "refs", "worktree", "x"):       "",
		filepath.Join(wt, ".git"):                            "gitdir: " + gitDir + "\n",
		filepath.Join(wt, "src", "a.go"):                     "package a\n",
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return wt, common, gitDir
}

// worktreeRoot lays out a repository with a linked worktree below a
// temporary directory and returns a Root of the worktree with its git
// view, and the repository's .git and the worktree's git directory.
func worktreeRoot(t *testing.T) (r *Root, common, gitDir string) {
	t.Helper()
	wt, common, gitDir := layOutWorktree(t)
	w, err := gitlayout.ResolveWorktree(wt)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fd, err := syscall.Open(wt, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	r = &Root{source: wt, rootFd: fd}
	if r.gitView, err = newGitView(w); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.gitView.close(); syscall.Close(fd) })
	return r, common, gitDir
}

// sameFile reports whether fd is the file at path.
func sameFile(t *testing.T, fd int, path string) bool {
	t.Helper()
	var a, b unix.Stat_t
	if err := unix.Fstat(fd, &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lstat(path, &b); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

func TestGitViewRoutesEachPath(t *testing.T) {
	r, common, gitDir := worktreeRoot(t)
	tests := []struct {
		rel  string
		want string // the file it opens; "" for ENOENT
	}{
		{".git", gitDir},
		{".git/HEAD", filepath.Join(gitDir, "HEAD")},
		{".git/index", filepath.Join(gitDir, "index")},
		{".git/logs/HEAD", filepath.Join(gitDir, "logs", "HEAD")},
		{".git/refs/worktree/x", filepath.Join(gitDir, "refs", "worktree", "x")},
		{".git/config", filepath.Join(common, "config")},
		{".git/packed-refs", filepath.Join(common, "packed-refs")},
		{".git/refs", filepath.Join(common, "refs")},
		{".git/refs/heads/main", filepath.Join(common, "refs", "heads", "main")},
		{".git/logs/refs/heads/wt", filepath.Join(common, "logs", "refs", "heads", "wt")},
		{".git/objects/ab/cd", filepath.Join(common, "objects", "ab", "cd")},
		{".git/hooks/pre-commit.sample", filepath.Join(common, "hooks", "pre-commit.sample")},
		{".git/info/exclude", filepath.Join(common, "info", "exclude")},
		{".git/commondir", ""},
		{".git/gitdir", ""},
		{"src/a.go", filepath.Join(r.source, "src", "a.go")},
	}
	for _, tt := range tests {
		fd, err := r.openBeneath(tt.rel, unix.O_PATH, 0)
		if tt.want == "" {
			if !errors.Is(err, syscall.ENOENT) {
				t.Errorf("%s: opened (%v), want ENOENT", tt.rel, err)
			}
			if err == nil {
				syscall.Close(fd)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.rel, err)
			continue
		}
		if !sameFile(t, fd, tt.want) {
			t.Errorf("%s did not open %s", tt.rel, tt.want)
		}
		syscall.Close(fd)
	}
	if b, err := r.readFile(".git/HEAD", 100); err != nil || string(b) != "ref: refs/heads/wt\n" {
		t.Errorf("readFile .git/HEAD = %q, %v", b, err)
	}
	for rel, want := range map[string]bool{"": true, ".git": true, ".git/refs": true, ".git/logs": true, ".git/logs/refs": true,
		".git/info": true, ".git/objects": false, ".git/refs/heads": false, "src": false} {
		if got := r.mixed(rel); got != want {
			t.Errorf("mixed(%q) = %v, want %v", rel, got, want)
		}
	}
}

// TestGitViewHidesTheGitDirectoryInCommon: the worktree's git directory
// also lies at worktrees/wt in the common directory; shown there too,
// one inode would have two places in the mount's tree.
func TestGitViewHidesTheGitDirectoryInCommon(t *testing.T) {
	r, _, _ := worktreeRoot(t)
	for rel, want := range map[string]bool{".git/worktrees/wt": true, ".git": false} {
		var st syscall.Stat_t
		if errno := r.withRouted(rel, func(dirfd int, name string) error { return fstatat(dirfd, name, &st) }); errno != 0 {
			t.Fatalf("%s: %v", rel, errno)
		}
		if got := r.shownTwice(rel, &st); got != want {
			t.Errorf("shownTwice(%s) = %v, want %v", rel, got, want)
		}
	}
}
