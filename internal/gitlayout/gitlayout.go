// Package gitlayout tells how a source's git repository lies on disk:
// whether the source's .git is a directory of its own, which a mount
// governs path by path; a linked worktree's .git file, whose git
// directory and the repository's common directory a mount serves as its
// .git (ResolveWorktree, PlaceOf); or another file or symlink leading to
// a git directory elsewhere (a submodule's checkout), whose writes would
// bypass the mount; and where the repository's other work trees are,
// which a sealed session must not reach.
//
// Everything read here may have been written by the agent's uid: each
// file is read as a regular file, never through a symlink, never
// blocking, and bounded.
package gitlayout

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/internal/textsafe"
)

const (
	// maxPathFile bounds a .git file, a commondir or a worktree's gitdir:
	// each holds one path.
	maxPathFile = 4096
	// MaxWorkTrees bounds the linked worktrees read from one repository.
	MaxWorkTrees = 1024
	// Guide is the manual page on giving each agent a workspace of its own.
	Guide = "docs/worktrees.md"
)

// ErrNotOwnGitDir is wrapped by CheckOwnGitDir's error.
var ErrNotOwnGitDir = errors.New("the source's .git is not a directory of its own")

// Linked describes a source whose .git is not a directory: what it leads
// to, as far as that could be read.
type Linked struct {
	Source string
	// Type is the .git entry's type: "file", "symlink", "directory" (one
	// holding a commondir file) or another.
	Type string
	// GitDir is the git directory a .git file names, or a symlink's
	// target ("" where unreadable); CommonDir is the repository's common
	// directory a linked worktree's gitdir names ("" where it has none,
	// as a submodule's, or it is unreadable).
	GitDir, CommonDir string
}

// Error says what the .git leads to, why a mount cannot govern it, and
// how to set up a workspace it can.
func (l *Linked) Error() string {
	var what string
	switch {
	case l.Type == "file" && l.CommonDir != "":
		what = fmt.Sprintf("is a linked worktree: its .git is a file naming the git directory %s, of the repository %s",
			textsafe.Escape(l.GitDir), textsafe.Escape(l.CommonDir))
	case l.Type == "file" && l.GitDir != "":
		what = fmt.Sprintf("has a .git file naming the git directory %s (a worktree's or a submodule's)", textsafe.Escape(l.GitDir))
	case l.Type == "file":
		what = "has a .git file (a worktree's or a submodule's) that does not name a readable git directory"
	case l.Type == "directory" && l.CommonDir != "":
		what = fmt.Sprintf("has a .git directory whose commondir file sends git to the repository %s", textsafe.Escape(l.CommonDir))
	case l.Type == "directory":
		what = "has a .git directory with a commondir file (unreadable: a symlink, not a regular file, or too large), which sends git to another repository"
	case l.Type == "symlink":
		what = fmt.Sprintf("has a .git that is a symlink to %s", textsafe.Escape(l.GitDir))
	default:
		what = fmt.Sprintf("has a .git that is a %s, not a directory", l.Type)
	}
	return fmt.Sprintf("%s %s, outside the source. intentfs governs git through the mount's own .git directory: "+
		"git in a mount of this source would write that repository directly, past the commit gate and the notes, "+
		"and a sealed session could write its hooks, its config and its other work trees. "+
		"Give each agent a clone of its own instead and mount that, e.g. "+
		"git clone --no-hardlinks %s /srv/agent1 && git -C /srv/agent1 switch -c agent1 (see %s)",
		textsafe.Escape(l.Source), what, textsafe.Escape(l.mainRepo()), Guide)
}

// Unwrap makes the error match ErrNotOwnGitDir.
func (l *Linked) Unwrap() error { return ErrNotOwnGitDir }

// mainRepo is the repository to clone: the work tree of the common
// directory where it is a .git, else the git directory itself.
func (l *Linked) mainRepo() string {
	dir := l.CommonDir
	if dir == "" {
		dir = l.GitDir
	}
	switch {
	case dir == "":
		return "REPOSITORY"
	case filepath.Base(dir) == ".git":
		return filepath.Dir(dir)
	}
	return dir
}

// CheckOwnGitDir returns nil where source has no .git or a .git directory
// of its own (no commondir in it), and otherwise a *Linked error (matching ErrNotOwnGitDir)
// that says where the .git leads and how to set the workspace up.
func CheckOwnGitDir(source string) error {
	st, err := os.Lstat(filepath.Join(source, ".git"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("reading %s: %w", filepath.Join(source, ".git"), err)
	case st.IsDir():
		return checkCommonDir(source)
	}
	l := &Linked{Source: source, Type: typeName(st.Mode())}
	switch l.Type {
	case "file":
		l.GitDir, l.CommonDir = readGitFile(source)
	case "symlink":
		if target, err := os.Readlink(filepath.Join(source, ".git")); err == nil {
			l.GitDir = target
		}
	}
	return l
}

// checkCommonDir refuses a .git directory that holds a commondir file:
// git then takes the objects, refs, config and hooks from the directory
// it names, as a linked worktree's git directory does.
func checkCommonDir(source string) error {
	b, err := safeio.ReadFile(source, ".git/commondir", maxPathFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		// Present but unreadable (a symlink, a FIFO, too large): git
		// might still follow it.
		return &Linked{Source: source, Type: "directory", GitDir: filepath.Join(source, ".git")}
	}
	l := &Linked{Source: source, Type: "directory", GitDir: filepath.Join(source, ".git")}
	if c := firstLine(b); c != "" {
		l.CommonDir = resolve(l.GitDir, c)
	}
	return l
}

func typeName(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// readGitFile resolves source's .git file: the git directory it names,
// and that directory's common directory (a linked worktree's main .git).
// Either is "" where it cannot be read.
func readGitFile(source string) (gitDir, commonDir string) {
	b, err := safeio.ReadFile(source, ".git", maxPathFile)
	if err != nil {
		return "", ""
	}
	gitDir, ok := ParseGitFile(b)
	if !ok {
		return "", ""
	}
	gitDir = resolve(source, gitDir)
	if b, err := safeio.ReadFile(gitDir, "commondir", maxPathFile); err == nil {
		if c := firstLine(b); c != "" {
			commonDir = resolve(gitDir, c)
		}
	}
	return gitDir, commonDir
}

// ParseGitFile returns the path a .git file names ("gitdir: PATH").
func ParseGitFile(b []byte) (string, bool) {
	p, ok := strings.CutPrefix(firstLine(b), "gitdir:")
	p = strings.TrimSpace(p)
	if !ok || p == "" {
		return "", false
	}
	return p, true
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(strings.TrimSuffix(line, "\r"))
}

// resolve makes p, read from a file in dir, an absolute clean path.
func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// WorkTrees returns the work trees of the linked worktrees of the
// repository at source (each recorded in .git/worktrees/NAME/gitdir as
// the path of its .git file), absolute and clean, in no particular order.
// Nothing on the way is followed through a symlink. A worktree whose
// record cannot be read is left out: git itself treats it as gone (git
// worktree prune removes it). More than MaxWorkTrees is an error.
func WorkTrees(source string) ([]string, error) {
	return workTreesIn(source, ".git/worktrees")
}

// WorkTreesOf is WorkTrees of the repository whose common directory (its
// main .git, or a bare repository) is commonDir: every linked worktree's
// work tree, the caller's own included.
func WorkTreesOf(commonDir string) ([]string, error) {
	return workTreesIn(commonDir, "worktrees")
}

// workTreesIn reads the worktree records in the directory admin below
// top.
func workTreesIn(top, admin string) ([]string, error) {
	source := top
	dir := filepath.Join(source, admin)
	rootFd, err := unix.Open(source, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the linked worktrees in %s: %w", dir, err)
	}
	defer unix.Close(rootFd)
	fd, err := safeio.OpenBeneath(rootFd, admin, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the linked worktrees in %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	names, err := f.Readdirnames(MaxWorkTrees + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading the linked worktrees in %s: %w", dir, err)
	}
	if len(names) > MaxWorkTrees {
		return nil, fmt.Errorf("%s holds more than %d linked worktrees", dir, MaxWorkTrees)
	}
	var trees []string
	for _, name := range names {
		rec := filepath.Join(admin, name)
		b, err := safeio.ReadFile(source, filepath.Join(rec, "gitdir"), maxPathFile)
		if err != nil {
			continue
		}
		p := firstLine(b)
		if p == "" {
			continue
		}
		// A relative record (worktree.useRelativePaths) is relative to
		// the worktree's directory in .git/worktrees.
		trees = append(trees, filepath.Dir(resolve(filepath.Join(source, rec), p)))
	}
	return trees, nil
}
