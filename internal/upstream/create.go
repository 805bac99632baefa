package upstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/policy"
)

// MirrorRel is where the mirror lives below the source: a bare repository
// inside the source's git directory. policy.MirrorDir (.git/intentfs/) is
// read-only through the mount whatever the scope (the agent cannot write
// it there), and git itself never looks in it.
const MirrorRel = policy.MirrorDir + "/upstream.git"

// openMirror returns the mirror of the repository at source, creating it
// (an empty bare repository) if missing. Every directory is created and
// opened relative to its parent's descriptor without following a
// symlink, and, when this process is root, given to the owner of .git, so
// git runs as that owner (gitexec.OpenGitDir) and never as root in a
// directory someone else can write. An existing mirror that belongs to
// someone other than the owner of .git is refused, not used.
func openMirror(ctx context.Context, source string) (*gitexec.Repo, error) {
	gitDir := filepath.Join(source, ".git")
	gfd, err := unix.Open(gitDir, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("the upstream mirror needs %s to be a directory, and it is a file or a symlink (a worktree or submodule's .git is not supported): %w", gitDir, err)
		}
		return nil, fmt.Errorf("the upstream mirror needs the git directory %s: %w", gitDir, err)
	}
	defer unix.Close(gfd)
	var st unix.Stat_t
	if err := unix.Fstat(gfd, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", gitDir, err)
	}
	dfd, err := mkdirOwned(gfd, gitDir, "intentfs", st.Uid, st.Gid)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	mfd, err := mkdirOwned(dfd, filepath.Join(gitDir, "intentfs"), "upstream.git", st.Uid, st.Gid)
	if err != nil {
		return nil, err
	}
	defer unix.Close(mfd)
	path := filepath.Join(source, MirrorRel)
	repo, err := gitexec.OpenGitDir(path)
	if err != nil {
		return nil, err
	}
	var head unix.Stat_t
	if err := unix.Fstatat(mfd, "HEAD", &head, unix.AT_SYMLINK_NOFOLLOW); err == nil && head.Mode&unix.S_IFMT == unix.S_IFREG {
		return repo, nil
	}
	// No templates: nothing but what a bare repository needs.
	if _, err := repo.Output(ctx, "-c", "init.defaultBranch=main", "init", "--bare", "--quiet", "--template="); err != nil {
		return nil, fmt.Errorf("creating the upstream mirror %s: %w", path, err)
	}
	return repo, nil
}

// mkdirOwned makes the directory name below the directory open as pfd
// (whose path is parent, for messages) if it is missing, owned by uid:gid
// when this process is root, and opens it without following a symlink.
func mkdirOwned(pfd int, parent, name string, uid, gid uint32) (int, error) {
	path := filepath.Join(parent, name)
	if err := unix.Mkdirat(pfd, name, 0o755); err == nil {
		if os.Geteuid() == 0 {
			if err := unix.Fchownat(pfd, name, int(uid), int(gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return -1, fmt.Errorf("creating %s: %w", path, err)
			}
		}
	} else if !errors.Is(err, unix.EEXIST) {
		return -1, fmt.Errorf("creating %s: %w", path, err)
	}
	fd, err := unix.Openat(pfd, name, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%s is not a directory (a symlink is not followed): %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", path, err)
	}
	if st.Uid != uid {
		unix.Close(fd)
		return -1, fmt.Errorf("%s belongs to uid %d, not to uid %d, the owner of the git directory: remove it and the mirror is made again", path, st.Uid, uid)
	}
	return fd, nil
}
