package fsnode_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/gitlayout"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/rawfs"
	"github.com/intentfs/intentfs/policy"
)

// newWorktreeKernel serves a linked worktree (wt, its git directory at
// repo/.git/worktrees/wt) with its git view, under INT-002 (everything).
func newWorktreeKernel(t *testing.T) (k *kernel, common, gitDir string) {
	t.Helper()
	wt, common, gitDir := fsnode.LayOutWorktree(t)
	w, err := gitlayout.ResolveWorktree(wt)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	in, _, err := policy.ParseIntents("p.yaml", []byte(rawPolicy))
	if err != nil {
		t.Fatal(err)
	}
	gov := &fakeGovernor{snap: &policy.Snapshot{Intents: in}, intent: "INT-002"}
	root, err := fsnode.NewRoot(fsnode.Options{Source: wt, Governor: gov, Log: slog.New(slog.DiscardHandler),
		Objects: objects.New(t.TempDir()), KeepMaxBytes: 1 << 20, MaxHandlesPerUID: 64, MaxCachedDirs: 16, Worktree: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	ops := rawfs.CountOps(rawfs.ElideOpendir(root.CallerScope(fs.NewNodeFS(root.Node(), &fs.Options{NullPermissions: true}))))
	k = &kernel{t: t, src: wt, gov: gov, root: root, raw: ops, ops: ops,
		caller: fuse.Caller{Owner: fuse.Owner{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, Pid: uint32(os.Getpid())},
		nodes:  map[string]uint64{"": fuse.FUSE_ROOT_ID}}
	return k, common, gitDir
}

// TestGitViewListsEachPlace: a directory of the view whose entries lie in
// both git directories lists each entry once, from the directory its own
// path leads to, and never the worktree's links to its repository.
func TestGitViewListsEachPlace(t *testing.T) {
	k, _, _ := newWorktreeKernel(t)
	tests := []struct {
		dir  string
		want []string
	}{
		{"", []string{".git", "src"}},
		{".git", []string{"HEAD", "config", "hooks", "index", "info", "logs", "objects", "packed-refs", "refs", "worktrees"}},
		{".git/refs", []string{"heads", "worktree"}},
		{".git/logs", []string{"HEAD", "refs"}},
		{".git/objects", []string{"ab"}},
	}
	for _, tt := range tests {
		names, st := k.list(tt.dir)
		slices.Sort(names)
		if st != fuse.OK || !slices.Equal(names, tt.want) {
			t.Errorf("listing %q: %v %v, want %v", tt.dir, names, st, tt.want)
		}
	}
	for rel, want := range map[string]string{".git/HEAD": "ref: refs/heads/wt\n", ".git/config": "[core]\n", "src/a.go": "package a\n"} {
		if got, st := k.read(rel); st != fuse.OK || got != want {
			t.Errorf("reading %s: %q %v, want %q", rel, got, st, want)
		}
	}
	for _, hidden := range []string{".git/commondir", ".git/gitdir", ".git/worktrees/wt"} {
		if _, st := k.node(hidden); st != fuse.ENOENT {
			t.Errorf("looking up %s: %v, want ENOENT", hidden, st)
		}
	}
}

// TestGitViewRenameBetweenPlaces: a rename or link between the worktree's
// git directory, the common directory and the work tree is EXDEV, as
// between filesystems, so what lands in each is what git puts there; one
// within a place is made where its path leads.
func TestGitViewRenameBetweenPlaces(t *testing.T) {
	k, common, gitDir := newWorktreeKernel(t)
	tests := []struct {
		name     string
		from, to string
		want     fuse.Status
	}{
		{"git dir to common dir", ".git/refs/worktree/x", ".git/refs/heads/x", fuse.Status(syscall.EXDEV)},
		{"common dir to git dir", ".git/refs/heads/main", ".git/refs/worktree/main", fuse.Status(syscall.EXDEV)},
		{"work tree to git dir", "src/a.go", ".git/refs/worktree/a", fuse.Status(syscall.EXDEV)},
		{"within the common dir", ".git/refs/heads/main", ".git/refs/heads/trunk", fuse.OK},
		{"within the work tree", "src/a.go", "src/b.go", fuse.OK},
	}
	for _, tt := range tests {
		if st := k.rename(tt.from, tt.to, 0); st != tt.want {
			t.Errorf("%s: rename %s to %s: %v, want %v", tt.name, tt.from, tt.to, st, tt.want)
		}
	}
	if st := k.link(".git/refs/heads/trunk", ".git/refs/heads/trunk2"); st != fuse.OK {
		t.Errorf("a link within the common dir: %v", st)
	}
	if st := k.link(".git/refs/worktree/x", ".git/refs/heads/x"); st != fuse.Status(syscall.EXDEV) {
		t.Errorf("a link from the git dir into the common dir: %v, want EXDEV", st)
	}
	for _, p := range []string{filepath.Join(common, "refs", "heads", "trunk"), filepath.Join(gitDir, "refs", "worktree", "x"),
		filepath.Join(k.src, "src", "b.go"), filepath.Join(common, "refs", "heads", "trunk2")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
