package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/intentfs/intentfs/internal/gitlayout"
	"github.com/intentfs/intentfs/internal/textsafe"
)

// RepositoryCovers returns what a session of the mount of source must
// not reach besides the source: the work trees of the repository's linked
// worktrees, which the agent's uid may own (another agent's tree, a
// human's), to be hidden like the source (Config.Hide).
//
// A linked worktree's session also must not reach the repository's main
// work tree, its common directory and the worktree's git directory: the
// mount serves them as its .git, through the gate; by their own paths
// the session could write the repository's hooks and config unrecorded.
// A source whose .git leads elsewhere in another way (a symlink, a
// submodule's checkout) is refused, as the mount refuses it. So is a
// work tree that holds the mountpoint, which no cover can hide from a
// session working in that mount, and one whose parent the user could
// rename (see CheckAncestors).
func RepositoryCovers(source, mountpoint string, u User) ([]string, error) {
	w, err := gitlayout.ResolveWorktree(source)
	if err != nil {
		return nil, err
	}
	var trees []string
	if w == nil {
		trees, err = gitlayout.WorkTrees(source)
	} else {
		w.Close()
		trees = []string{w.MainTree(), w.CommonDir, w.GitDir}
		var linked []string
		linked, err = gitlayout.WorkTreesOf(w.CommonDir)
		trees = append(trees, linked...)
	}
	if err != nil {
		return nil, fmt.Errorf("finding the repository's other work trees, which a session must not reach: %w", err)
	}
	var covers []string
	for _, dir := range trees {
		if slices.ContainsFunc(covers, func(c string) bool { return within(dir, c) }) {
			continue // hidden with a cover already taken
		}
		switch {
		case within(dir, source):
			continue // hidden with the source
		case within(mountpoint, dir):
			return nil, fmt.Errorf("the mount %s lies in %s, a linked worktree of the source's repository, which a session must not reach: "+
				"mount the source somewhere outside the repository's work trees", textsafe.Escape(mountpoint), textsafe.Escape(dir))
		}
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			continue // a stale record: git worktree prune removes it
		}
		if err := CheckAncestors(dir, u); err != nil {
			return nil, fmt.Errorf("the source's repository has a linked worktree at %s, which a session must not reach: %w", textsafe.Escape(dir), err)
		}
		covers = append(covers, dir)
	}
	return covers, nil
}

// OtherSourceCovers returns, of the sources of the other intentfs mounts
// (others, as the root registry lists them), those a session of the mount
// of source at mountpoint must not reach: each is another agent's
// workspace, perhaps owned by the same uid, where a write would go
// unrecorded. A source that holds the mountpoint cannot be hidden from a
// session working there: refused.
func OtherSourceCovers(others []string, source, mountpoint string) ([]string, error) {
	var covers []string
	for _, dir := range others {
		switch {
		case !filepath.IsAbs(dir) || filepath.Clean(dir) != dir:
			return nil, fmt.Errorf("another mount's source %q is not an absolute clean path", textsafe.Escape(dir))
		case within(dir, source):
			continue // hidden with the source
		case within(mountpoint, dir):
			return nil, fmt.Errorf("the mount %s lies in %s, the source of another intentfs mount, which a session must not reach: "+
				"mount the source somewhere outside every mounted source", textsafe.Escape(mountpoint), textsafe.Escape(dir))
		}
		covers = append(covers, dir)
	}
	return covers, nil
}
