package gitlayout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/internal/textsafe"
)

// Worktree is a linked worktree's git layout, resolved once when it is
// mounted: the worktree's own git directory (HEAD, index, the state of a
// merge or a rebase) and the repository's common directory (objects,
// refs, config, hooks), which a mount presents together as its .git.
//
// The descriptors are O_PATH handles opened without following any
// symlink; they stay what was checked whatever is renamed later. Close
// releases them.
type Worktree struct {
	Source string
	// GitDir and CommonDir are the absolute clean paths that were
	// opened; GitDirFd and CommonDirFd the handles.
	GitDir, CommonDir     string
	GitDirFd, CommonDirFd int
}

// MainTree is the repository's main work tree: the directory holding the
// common directory where that is a .git, else the common directory itself
// (a bare repository).
func (w *Worktree) MainTree() string {
	if filepath.Base(w.CommonDir) == ".git" {
		return filepath.Dir(w.CommonDir)
	}
	return w.CommonDir
}

// Close releases the handles.
func (w *Worktree) Close() {
	unix.Close(w.GitDirFd)
	unix.Close(w.CommonDirFd)
}

// ResolveWorktree returns nil, nil where source has no .git or a .git
// directory of its own; a *Worktree where its .git is a regular file
// naming a linked worktree's git directory that is laid out as git lays
// it out (the git directory holds commondir, and its gitdir file names
// this source's .git back; the common directory holds objects and refs),
// each reached without a symlink anywhere on its path; and an error that
// says why and how to set the workspace up otherwise. A submodule's .git
// file is refused: its git directory's config names the submodule's
// work tree (core.worktree), where git in the mount would write the
// source directly.
func ResolveWorktree(source string) (*Worktree, error) {
	err := CheckOwnGitDir(source)
	var l *Linked
	if err == nil || !errors.As(err, &l) || l.Type != "file" || l.CommonDir == "" {
		return nil, err
	}
	w := &Worktree{Source: source, GitDir: l.GitDir, CommonDir: l.CommonDir, GitDirFd: -1, CommonDirFd: -1}
	if err := w.open(); err != nil {
		w.Close()
		return nil, &WorktreeError{Worktree: w, Err: err}
	}
	return w, nil
}

// open opens and checks the two directories.
func (w *Worktree) open() error {
	var err error
	if w.GitDirFd, err = openNoSymlinks(w.GitDir); err != nil {
		return fmt.Errorf("opening its git directory %s: %w", textsafe.Escape(w.GitDir), err)
	}
	if w.CommonDirFd, err = openNoSymlinks(w.CommonDir); err != nil {
		return fmt.Errorf("opening the repository's common directory %s: %w", textsafe.Escape(w.CommonDir), err)
	}
	// The commondir the handle holds now must be the one resolved.
	b, err := readBeneath(w.GitDirFd, "commondir")
	if err != nil {
		return fmt.Errorf("reading %s/commondir: %w", textsafe.Escape(w.GitDir), err)
	}
	if c := resolve(w.GitDir, firstLine(b)); c != w.CommonDir {
		return fmt.Errorf("%s/commondir changed while it was read", textsafe.Escape(w.GitDir))
	}
	b, err = readBeneath(w.GitDirFd, "gitdir")
	if err != nil {
		return fmt.Errorf("reading %s/gitdir, which names the worktree's .git file: %w", textsafe.Escape(w.GitDir), err)
	}
	if back, want := resolve(w.GitDir, firstLine(b)), filepath.Join(w.Source, ".git"); back != want {
		return fmt.Errorf("the git directory %s belongs to the worktree at %s, not to %s", textsafe.Escape(w.GitDir),
			textsafe.Escape(filepath.Dir(back)), textsafe.Escape(w.Source))
	}
	for _, c := range []struct {
		fd   int
		name string
		dir  bool
	}{{w.GitDirFd, "HEAD", false}, {w.CommonDirFd, "objects", true}, {w.CommonDirFd, "refs", true}} {
		var st unix.Stat_t
		if err := unix.Fstatat(c.fd, c.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("it is not laid out as a git repository: %s: %w", c.name, err)
		}
		if isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR; isDir != c.dir || (!c.dir && st.Mode&unix.S_IFMT != unix.S_IFREG) {
			return fmt.Errorf("it is not laid out as a git repository: %s is not a %s", c.name, map[bool]string{true: "directory", false: "regular file"}[c.dir])
		}
	}
	// The reftable backend keeps the shared refs and each worktree's in
	// reftable/ directories of both, which git's path rule does not
	// split: the view would show the wrong refs.
	var st unix.Stat_t
	if err := unix.Fstatat(w.CommonDirFd, "reftable", &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return errors.New("the repository keeps its refs in reftable, which a worktree mount does not serve (use a clone of it)")
	}
	return nil
}

// openNoSymlinks opens the directory at the absolute path p as an O_PATH
// handle, refusing a symlink anywhere on the path.
func openNoSymlinks(p string) (int, error) {
	if !filepath.IsAbs(p) {
		return -1, fmt.Errorf("%s is not an absolute path", textsafe.Escape(p))
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	fd, err := safeio.OpenBeneath(root, strings.TrimPrefix(filepath.Clean(p), "/"), unix.O_PATH|unix.O_DIRECTORY, 0)
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return -1, fmt.Errorf("a symlink lies on the path, and intentfs never follows one to a git directory: %w", err)
	case err != nil:
		return -1, err
	}
	return fd, nil
}

// readBeneath reads the small regular file name in the directory dirfd,
// never through a symlink, never blocking.
func readBeneath(dirfd int, name string) ([]byte, error) {
	fd, err := safeio.OpenBeneath(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !st.Mode().IsRegular():
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPathFile+1))
	if err == nil && len(b) > maxPathFile {
		return nil, safeio.ErrTooLarge
	}
	return b, err
}

// WorktreeError says why a linked worktree cannot be mounted.
type WorktreeError struct {
	Worktree *Worktree
	Err      error
}

func (e *WorktreeError) Error() string {
	return fmt.Sprintf("%s is a linked worktree of the repository %s, but it cannot be governed: %v. "+
		"A mount presents the worktree's git directory and the repository's common directory as its .git, "+
		"so both must be reached without a symlink and laid out as git worktree add makes them; "+
		"repair it with git worktree repair, or give the agent a worktree of its own (see %s)",
		textsafe.Escape(e.Worktree.Source), textsafe.Escape(e.Worktree.CommonDir), e.Err, Guide)
}

// Unwrap makes the error match ErrNotOwnGitDir.
func (e *WorktreeError) Unwrap() error { return ErrNotOwnGitDir }

// Place is where a path below a worktree mount's .git lies.
type Place int

const (
	// InGitDir is the worktree's own git directory.
	InGitDir Place = iota
	// InCommonDir is the repository's common directory.
	InCommonDir
	// Hidden is a file of the worktree's git directory that the view
	// does not show: commondir and gitdir would tell git it is in a
	// linked worktree, and send it to their paths.
	Hidden
)

// The split is git's own (path.c, common_list): what lies in the common
// directory, and the per-worktree exceptions below it.
var (
	commonTops  = []string{"branches", "common", "hooks", "info", "logs", "lost-found", "objects", "refs", "remotes", "worktrees", "rr-cache", "svn"}
	commonFiles = []string{"config", "gc.pid", "packed-refs", "shallow", "description"}
	perWorktree = []string{"info/sparse-checkout", "logs/HEAD", "logs/refs/bisect", "logs/refs/rewritten", "logs/refs/worktree",
		"refs/bisect", "refs/rewritten", "refs/worktree"}
	// mixedDirs are the directories that hold entries of both places.
	mixedDirs = []string{"", "info", "logs", "logs/refs", "refs"}
)

// PlaceOf says where p, a slash-separated path below .git ("" for .git
// itself), lies. As git does, a lock file lies where the file it locks
// does, and so does the temporary file git renames over packed-refs
// (packed-refs.new).
func PlaceOf(p string) Place {
	p = strings.TrimSuffix(p, ".lock")
	if p == "packed-refs.new" {
		p = "packed-refs"
	}
	if p == "commondir" || p == "gitdir" {
		return Hidden
	}
	for _, x := range perWorktree {
		if p == x || strings.HasPrefix(p, x+"/") {
			return InGitDir
		}
	}
	top, _, sub := strings.Cut(p, "/")
	if slices.Contains(commonTops, top) || (!sub && slices.Contains(commonFiles, top)) {
		return InCommonDir
	}
	return InGitDir
}

// MixedDir reports whether the directory p below .git holds entries of
// both places, so that an entry's place is found by its own path.
func MixedDir(p string) bool { return slices.Contains(mixedDirs, p) }
