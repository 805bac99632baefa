package objects

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// The store holds the bytes of versions a change destroyed, including
// versions of files whose modes hid their content from other users (a
// write-only file an agent appended to). So the store is readable by the
// daemon's user only: its directories are 0700 and owned by that user,
// which makes every object below unreachable to anyone else whatever the
// object's own mode (objects hard-linked in keep the mode the file had;
// copies are 0400). Through the mount the kernel checks the same modes,
// so .orchestration/objects is closed to other users there too.
const (
	privateDirMode  = 0o700
	privateFileMode = 0o400
)

// MakePrivate creates the store's directories if needed and gives them,
// and those an older version left world-readable, to the daemon's user
// with mode 0700. It runs at mount, before anything is kept. A symlink in
// the store's place is refused: the store must be a directory of its own.
func (s *Store) MakePrivate() error {
	for _, d := range []string{s.root, filepath.Join(s.root, "sha256"), s.pendingDir()} {
		if err := os.MkdirAll(d, privateDirMode); err != nil {
			return fmt.Errorf("object store: %w", err)
		}
	}
	dirs := []string{s.root, filepath.Join(s.root, "sha256"), s.pendingDir()}
	fanout, err := os.ReadDir(filepath.Join(s.root, "sha256"))
	if err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	for _, e := range fanout {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(s.root, "sha256", e.Name()))
		}
	}
	for _, d := range dirs {
		if err := makeDirPrivate(d); err != nil {
			return fmt.Errorf("object store: making %s private: %w", d, err)
		}
		s.made.Store(d, true)
	}
	return nil
}

// makeDirPrivate chowns (when root) and chmods the directory at path
// through a descriptor opened without following a symlink.
func makeDirPrivate(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if os.Geteuid() == 0 {
		if err := unix.Fchown(fd, os.Geteuid(), os.Getegid()); err != nil {
			return err
		}
	}
	return syscall.Fchmod(fd, privateDirMode)
}
