package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// GitignoreFile is the .gitignore `intentfs init` writes in .orchestration/.
const GitignoreFile = policy.OrchestrationDir + "/.gitignore"

// GitignorePath is the .gitignore of .orchestration/.
func (l Layout) GitignorePath() string { return filepath.Join(l.source, GitignoreFile) }

// orchestrationGitignore keeps intentfs's local state out of commits (a
// `git add -A` in the mount would otherwise commit the ledger, the object
// store and lock files). Paths are relative to .orchestration/.
func orchestrationGitignore() string {
	return fmt.Sprintf(`# Written by intentfs init: intentfs's local state, never committed.
#
# In the repository: active_intents.yaml (the policy), .intentignore,
# %[5]s and the lessons file (%[6]s).
# Not in the repository: the ledger, which travels with the repository as
# git notes instead (intentfs notes sync; intentfs notes push), the object
# store of replaced versions, the ledger's reserved room, the locks (of
# the mount and of policy write-backs), and temporary files.
/%[1]s
/%[2]s
/%[1]s.torn
/%[1]s%[7]s
/%[3]s/
/%[4]s
/.*.lock
.*.tmp-*
`, filepath.Base(ledger.FileName), "agent_trace.*.jsonl", filepath.Base(objects.Dir), filepath.Base(ledger.LockFile),
		IntentMapFile, DefaultLessonsFile, ledger.ReserveSuffix)
}

// WriteGitignore writes .orchestration/.gitignore unless one is there. It
// returns the path written, or "" if it kept an existing one.
func (l Layout) WriteGitignore() (string, error) {
	path := l.GitignorePath()
	if _, err := os.Lstat(path); err == nil {
		return "", nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	// Into the real .orchestration/ only, never through a symlink a clone
	// committed in its place.
	dirfd, err := safeio.OpenDir(filepath.Dir(path))
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	// Run as root, the file is the workspace owner's all the same.
	owner, err := safeio.OwnerAt(dirfd, filepath.Base(path), 0o644)
	if err != nil {
		unix.Close(dirfd)
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	fd, err := unix.Openat(dirfd, filepath.Base(path), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	unix.Close(dirfd)
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	if err := owner.Set(fd); err != nil {
		f.Close()
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.WriteString(orchestrationGitignore()); err != nil {
		f.Close()
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, f.Close()
}
