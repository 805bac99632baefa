package gitgate

import (
	"errors"
	"fmt"
	"path"
	"syscall"

	"github.com/intentfs/intentfs/internal/safeio"
)

// TrustedGit reports whether exe is a git binary the agent cannot have
// made: named git, owned by root, writable by no one else.
func TrustedGit(exe string) bool { return trustedGit(exe) }

func trustedGit(exe string) bool {
	if path.Base(exe) != "git" || !path.IsAbs(exe) {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Stat(exe, &st); err != nil {
		return false
	}
	return st.Uid == 0 && st.Mode&0o022 == 0 && st.Mode&syscall.S_IFMT == syscall.S_IFREG
}

// packBeside reports whether the pack an index belongs to is there (or
// cannot be told to be absent).
func packBeside(source, gitDir, pack string) bool {
	var st syscall.Stat_t
	err := syscall.Lstat(path.Join(source, gitDir, "objects/pack", pack+".pack"), &st)
	return err == nil || !errors.Is(err, syscall.ENOENT)
}

// objectsOf returns where the objects of the workspace's git directory
// gitDir lie: a directory and the path of the git directory below it
// (for a linked worktree's .git, the repository's common directory).
func (g *Gate) objectsOf(gitDir string) (root, dir string) {
	if gitDir == ".git" && g.cfg.CommonDir != "" {
		return g.cfg.CommonDir, ""
	}
	return g.cfg.Source, gitDir
}

// readIdx reads a pack's index from the source.
func readIdx(source, gitDir, pack string) ([]byte, error) {
	b, err := safeio.ReadFile(source, path.Join(gitDir, "objects/pack", pack+".idx"), maxIdxBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the index of %s: %w", pack, err)
	}
	return b, nil
}
