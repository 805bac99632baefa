package safeio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ReplaceBelow atomically replaces path, a file in a directory (such as
// .claude) of a directory that exists (a workspace), where the user who
// owns the workspace, or an agent working in it, may have put anything:
// neither the directory nor the file is followed if it is a symlink, the
// directory is made if missing, and everything happens relative to
// descriptors, so nothing swapped in meanwhile is written through. Run as
// root, a new directory or file gets the owner of the workspace (a
// replaced file keeps its owner and mode): root's hook install must not
// leave root-owned files in a user's checkout.
func ReplaceBelow(path string, data []byte, mode os.FileMode) error {
	dir, name := filepath.Split(filepath.Clean(path))
	dir = filepath.Clean(dir)
	top, sub := filepath.Split(dir)
	wfd, err := unix.Open(filepath.Clean(top), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("writing %s: opening %s: %w", path, top, err)
	}
	defer unix.Close(wfd)
	var ws unix.Stat_t
	if err := unix.Fstat(wfd, &ws); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	root := os.Geteuid() == 0
	if err := unix.Mkdirat(wfd, sub, 0o755); err == nil {
		if root {
			if err := unix.Fchownat(wfd, sub, int(ws.Uid), int(ws.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return fmt.Errorf("writing %s: %w", path, err)
			}
		}
	} else if !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("writing %s: creating %s: %w", path, dir, err)
	}
	dfd, err := unix.Openat(wfd, sub, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %s is not a directory (a symlink is not followed): %w", path, dir, err)
	}
	defer unix.Close(dfd)
	uid, gid, perm := int(ws.Uid), int(ws.Gid), uint32(mode.Perm())
	var old unix.Stat_t
	switch err := unix.Fstatat(dfd, name, &old, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && old.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("writing %s: not a regular file (a symlink is not followed)", path)
	case err == nil:
		uid, gid, perm = int(old.Uid), int(old.Gid), old.Mode&0o777
	case !errors.Is(err, unix.ENOENT):
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := fmt.Sprintf(".%s.tmp-%d", name, os.Getpid())
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, tmp))
	_, err = f.Write(data)
	if err == nil && root {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		err = f.Chmod(os.FileMode(perm))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
