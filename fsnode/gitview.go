package fsnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/gitlayout"
	"github.com/intentfs/intentfs/internal/safeio"
)

// maxMixedEntries bounds a merged listing of a directory of a worktree's
// .git (the top, refs, logs, info): git keeps few entries there.
const maxMixedEntries = 1 << 16

// gitView serves a linked worktree's two git directories as the mount's
// .git directory: each path below .git lies in the worktree's own git
// directory or in the repository's common directory, by git's own rule
// (gitlayout.PlaceOf), so git in the mount sees an ordinary repository
// and every rule on .git applies to the paths it uses. The handles were
// opened once, when the worktree was mounted, without following a
// symlink: nothing written through the mount, the .git file included,
// can point the view elsewhere.
type gitView struct {
	gitFd, commonFd int
	// gitDev and gitIno are the git directory's: it also lies in the
	// common directory (worktrees/NAME), where the view must not show it
	// a second time (one inode at two places in the tree would make a
	// cycle of parents).
	gitDev uint64
	gitIno uint64
}

// newGitView takes handles of its own on w's directories.
func newGitView(w *gitlayout.Worktree) (*gitView, error) {
	g, err := unix.FcntlInt(uintptr(w.GitDirFd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	c, err := unix.FcntlInt(uintptr(w.CommonDirFd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		unix.Close(g)
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(g, &st); err != nil {
		unix.Close(g)
		unix.Close(c)
		return nil, err
	}
	return &gitView{gitFd: g, commonFd: c, gitDev: st.Dev, gitIno: st.Ino}, nil
}

// shownTwice reports whether st, found at rel, is the view's git
// directory at a place other than .git.
func (r *Root) shownTwice(rel string, st *syscall.Stat_t) bool {
	v := r.gitView
	return v != nil && rel != ".git" && uint64(st.Dev) == v.gitDev && st.Ino == v.gitIno
}

func (v *gitView) close() {
	unix.Close(v.gitFd)
	unix.Close(v.commonFd)
}

// belowGitDir returns the path of rel below .git, and whether rel is
// .git or lies below it.
func belowGitDir(rel string) (string, bool) {
	if rel == ".git" {
		return "", true
	}
	return strings.CutPrefix(rel, ".git/")
}

// route is the one door from a workspace-relative path to the source:
// the directory handle rel lies beneath and rel's path below it. Without
// a view that is the source's root and rel; with one, a path below .git
// lies beneath the worktree's git directory or the common directory, and
// a hidden one is not there.
func (r *Root) route(rel string) (int, string, error) {
	if r.gitView == nil {
		return r.rootFd, rel, nil
	}
	p, ok := belowGitDir(rel)
	if !ok {
		return r.rootFd, rel, nil
	}
	switch gitlayout.PlaceOf(p) {
	case gitlayout.Hidden:
		return -1, "", syscall.ENOENT
	case gitlayout.InCommonDir:
		return r.gitView.commonFd, p, nil
	}
	return r.gitView.gitFd, p, nil
}

// openBeneath opens rel through route, without following any symlink.
func (r *Root) openBeneath(rel string, flags int, mode uint32) (int, error) {
	base, below, err := r.route(rel)
	if err != nil {
		return -1, err
	}
	return openBeneath(base, below, flags, mode)
}

// readFile reads the regular file rel through route, as safeio.ReadFile
// does: bounded, never through a symlink, never blocking.
func (r *Root) readFile(rel string, max int64) ([]byte, error) {
	base, below, err := r.route(rel)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	return safeio.ReadFileAt(base, below, max)
}

// openDir opens directory rel through route as an O_PATH handle.
func (r *Root) openDir(rel string) (int, error) {
	return r.openBeneath(rel, unix.O_PATH|syscall.O_DIRECTORY, 0)
}

// mixed reports whether the entries of directory rel lie beneath
// different handles (the root, whose .git is the view; the view's top,
// refs, logs, info), so that each is reached by its own path.
func (r *Root) mixed(rel string) bool {
	if r.gitView == nil {
		return false
	}
	if rel == "" {
		return true
	}
	p, ok := belowGitDir(rel)
	return ok && gitlayout.MixedDir(p)
}

// withRouted runs fn with a handle on the directory that holds rel, and
// rel's name in it; for the view's .git itself, the git directory's
// handle and "" (as for the root: an *at call with no name acts on the
// handle, or fails).
func (r *Root) withRouted(rel string, fn func(dirfd int, name string) error) syscall.Errno {
	base, below, err := r.route(rel)
	if err != nil {
		return fs.ToErrno(err)
	}
	if below == "" {
		return fs.ToErrno(fn(base, ""))
	}
	dir, name := splitRel(below)
	if dir == "" {
		return fs.ToErrno(fn(base, name))
	}
	dirfd, err := openDir(base, dir)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer syscall.Close(dirfd)
	return fs.ToErrno(fn(dirfd, name))
}

// withChild runs fn with a handle on the directory holding name, a child
// of n, and its name there: n's own handle, or, in a directory whose
// entries lie beneath different handles, the one name's path leads to.
func (n *Node) withChild(name string, fn func(dirfd int, name string) error) syscall.Errno {
	if n.root.gitView != nil {
		rel, ok := n.relPath()
		if !ok {
			return syscall.ENOENT
		}
		if n.root.mixed(rel) {
			return n.root.withRouted(joinRel(rel, name), fn)
		}
	}
	return n.withDir(func(dirfd int) error { return fn(dirfd, name) })
}

// withChildren is withChild of an in a and bn in b, for a call that
// takes both (rename, link): one between the worktree's git directory,
// the common directory and the work tree is EXDEV, as between
// filesystems, so that what lands in each is what git puts there.
func withChildren(a *Node, an string, b *Node, bn string, fn func(afd int, an string, bfd int, bn string) error) syscall.Errno {
	r := a.root
	if r.gitView == nil {
		return withDirs(a, b, func(afd, bfd int) error { return fn(afd, an, bfd, bn) })
	}
	adir, ok1 := a.relPath()
	bdir, ok2 := b.relPath()
	if !ok1 || !ok2 {
		return syscall.ENOENT
	}
	abase, _, err := r.route(joinRel(adir, an))
	if err != nil {
		return fs.ToErrno(err)
	}
	bbase, _, err := r.route(joinRel(bdir, bn))
	if err != nil {
		return fs.ToErrno(err)
	}
	if abase != bbase {
		return syscall.EXDEV
	}
	if !r.mixed(adir) && !r.mixed(bdir) {
		return withDirs(a, b, func(afd, bfd int) error { return fn(afd, an, bfd, bn) })
	}
	// At least one side opens its handle per call: no read lock is
	// taken twice on one node.
	return a.withChild(an, func(afd int, an string) error {
		return errnoAsError(b.withChild(bn, func(bfd int, bn string) error { return fn(afd, an, bfd, bn) }))
	})
}

// isViewTop reports whether name in n is the view's .git, which stands
// for the worktree's git directory: it is looked up and listed, never
// made, removed or replaced.
func (n *Node) isViewTop(name string) bool {
	return n.root.gitView != nil && name == ".git" && n.IsRoot()
}

// openMixedDir lists directory rel, whose entries lie beneath both of
// the view's handles: each entry from the directory its own path leads
// to, read as the caller.
func (r *Root) openMixedDir(ctx context.Context, rel string) (fs.DirStream, syscall.Errno) {
	p, _ := belowGitDir(rel)
	var entries []fuse.DirEntry
	for _, place := range []gitlayout.Place{gitlayout.InGitDir, gitlayout.InCommonDir} {
		base := r.gitView.gitFd
		if place == gitlayout.InCommonDir {
			base = r.gitView.commonFd
		}
		var fd int
		err := r.asCaller(ctx, func() (err error) {
			fd, err = openBeneath(base, p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
			return err
		})
		switch {
		case errors.Is(err, syscall.ENOENT) && p != "":
			continue // the worktree has no refs/ or logs/ of its own yet
		case err != nil:
			return nil, fs.ToErrno(err)
		}
		found, err := r.listPlace(fd, p, place, maxMixedEntries-len(entries))
		if err != nil {
			return nil, fs.ToErrno(err)
		}
		entries = append(entries, found...)
	}
	return fs.NewListDirStream(entries), 0
}

// listPlace lists the entries of the directory fd (closed here), the
// part of p, below .git, that lies in place: those whose own path lies
// there too. More than max entries is EFBIG.
func (r *Root) listPlace(fd int, p string, place gitlayout.Place, max int) ([]fuse.DirEntry, error) {
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	names, err := f.Readdirnames(max + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(names) > max {
		return nil, syscall.EFBIG
	}
	var entries []fuse.DirEntry
	for _, name := range names {
		if gitlayout.PlaceOf(joinRel(p, name)) != place {
			continue
		}
		var st syscall.Stat_t
		if err := fstatat(int(f.Fd()), name, &st); err != nil {
			continue // gone since it was listed
		}
		entries = append(entries, fuse.DirEntry{Name: name, Mode: st.Mode & syscall.S_IFMT, Ino: r.idFromStat(&st).Ino})
	}
	return entries, nil
}
