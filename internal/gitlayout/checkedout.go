package gitlayout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/internal/textsafe"
)

// maxWorktrees bounds the linked worktrees read from a repository's
// worktrees/ directory.
const maxWorktrees = 4096

// CheckedOut lists the branches the other work trees of the repository
// whose common directory is commonDir have checked out: the main work
// tree's HEAD and each linked worktree's, all but the one whose git
// directory is ownGitDir. It maps each branch ("refs/heads/main") to the
// work tree holding it, and IsMain to whether that is the main one. The
// directories are read again at every call (a worktree may be added at
// any time), never through a symlink, never blocking; an error means the
// answer is not known.
func CheckedOut(commonDir, ownGitDir string) (map[string]Holder, error) {
	fd, err := openNoSymlinks(commonDir)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", textsafe.Escape(commonDir), err)
	}
	defer unix.Close(fd)
	out := map[string]Holder{}
	main := filepath.Dir(commonDir)
	if filepath.Base(commonDir) != ".git" {
		main = commonDir
	}
	if b, err := readBeneath(fd, "HEAD"); err == nil {
		if ref, ok := symbolicRef(b); ok {
			out[ref] = Holder{Tree: main, IsMain: true}
		}
	} else if !errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("reading %s/HEAD: %w", textsafe.Escape(commonDir), err)
	}
	names, err := worktreeNames(fd)
	if err != nil {
		return nil, fmt.Errorf("listing %s/worktrees: %w", textsafe.Escape(commonDir), err)
	}
	for _, name := range names {
		dir := filepath.Join(commonDir, "worktrees", name)
		if dir == filepath.Clean(ownGitDir) {
			continue
		}
		b, err := readBeneath(fd, "worktrees/"+name+"/HEAD")
		if errors.Is(err, unix.ENOENT) {
			continue // a worktree being added or pruned holds nothing yet
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s/HEAD: %w", textsafe.Escape(dir), err)
		}
		ref, ok := symbolicRef(b)
		if !ok {
			continue // detached
		}
		tree := dir
		if g, err := readBeneath(fd, "worktrees/"+name+"/gitdir"); err == nil {
			// gitdir names the worktree's .git file.
			tree = filepath.Dir(resolve(dir, firstLine(g)))
		}
		out[ref] = Holder{Tree: tree}
	}
	return out, nil
}

// Holder is the work tree that has a branch checked out.
type Holder struct {
	Tree   string
	IsMain bool
}

// symbolicRef returns the branch a HEAD file names ("ref: refs/heads/x").
func symbolicRef(b []byte) (string, bool) {
	ref, ok := strings.CutPrefix(firstLine(b), "ref:")
	ref = strings.TrimSpace(ref)
	return ref, ok && strings.HasPrefix(ref, "refs/heads/")
}

// worktreeNames lists the entries of worktrees/ below the directory fd
// (none if there is no such directory).
func worktreeNames(fd int) ([]string, error) {
	dfd, err := safeio.OpenBeneath(fd, "worktrees", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dfd), "worktrees")
	defer d.Close()
	names, err := d.Readdirnames(maxWorktrees + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(names) > maxWorktrees {
		return nil, fmt.Errorf("more than %d worktrees", maxWorktrees)
	}
	return names, nil
}
