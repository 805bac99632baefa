package safeio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Owner is the owner, group and mode that a file intentfs writes into a
// workspace gets: the daemon usually runs as root, and a file it leaves
// owned by root locks the checkout's owner out of it.
type Owner struct {
	Uid, Gid int
	// Mode holds the permission bits (and setuid, setgid, sticky).
	Mode uint32
}

// OwnerFor returns the Owner of a file to be written at path: the owner,
// group and mode of the regular file it replaces, else the owner and
// group of its directory with mode def. A symlink at path is not
// followed (its directory decides).
func OwnerFor(path string, def os.FileMode) (Owner, error) {
	dfd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Owner{}, fmt.Errorf("the directory of %s: %w", path, err)
	}
	defer unix.Close(dfd)
	return OwnerAt(dfd, filepath.Base(path), def)
}

// OwnerAt is OwnerFor for the name name in the directory dirfd.
func OwnerAt(dirfd int, name string, def os.FileMode) (Owner, error) {
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG:
		return Owner{Uid: int(st.Uid), Gid: int(st.Gid), Mode: st.Mode & 0o7777}, nil
	case err != nil && !errors.Is(err, unix.ENOENT):
		return Owner{}, err
	}
	if err := unix.Fstat(dirfd, &st); err != nil {
		return Owner{}, err
	}
	return Owner{Uid: int(st.Uid), Gid: int(st.Gid), Mode: uint32(def.Perm())}, nil
}

// Set gives the open file fd o's owner, group and mode. The owner and
// group change only for a process running as root, the only one that may
// give a file away; the mode is set after them, since a change of owner
// clears setuid and setgid.
func (o Owner) Set(fd int) error {
	if os.Geteuid() == 0 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if int(st.Uid) != o.Uid || int(st.Gid) != o.Gid {
			if err := unix.Fchown(fd, o.Uid, o.Gid); err != nil {
				return fmt.Errorf("giving it to %d:%d: %w", o.Uid, o.Gid, err)
			}
		}
	}
	return unix.Fchmod(fd, o.Mode)
}

// MkdirAt makes the directory name in dirfd with mode, owned by the owner
// and group of dirfd (see Owner.Set).
func MkdirAt(dirfd int, name string, mode os.FileMode) error {
	o, err := OwnerAt(dirfd, name, mode)
	if err != nil {
		return err
	}
	if err := unix.Mkdirat(dirfd, name, uint32(mode.Perm())); err != nil {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return o.Set(fd)
}
