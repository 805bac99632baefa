package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/safeio"
)

// ErrUnsafeFile is wrapped by the error of a ledger file, or the
// directory holding it, that is a symlink or not a regular file. A clone
// can carry either (a committed .orchestration/agent_trace.jsonl ->
// /dev/urandom), and following it would make a reader spin, block on a
// FIFO, or read a file outside the workspace.
var ErrUnsafeFile = errors.New("intentfs reads a ledger only from regular files in the workspace, never through a symlink")

// openDir opens the directory dir for reading its entries, refusing a
// symlink in its place (the components above it are the path the user
// named, and are followed).
func openDir(dir string) (*os.File, error) {
	pfd, err := safeio.OpenDir(dir)
	if errors.Is(err, safeio.ErrSymlink) {
		return nil, fmt.Errorf("ledger directory %w: %w", err, ErrUnsafeFile)
	}
	if err != nil {
		return nil, err
	}
	defer syscall.Close(pfd)
	fd, err := safeio.OpenBeneath(pfd, "", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// openRead opens the ledger file at path for reading: no symlink in its
// place or in the place of its directory, never blocking (O_NONBLOCK: a
// FIFO answers at once), and a regular file, so it has an end.
func openRead(path string) (*os.File, error) {
	dir, err := openDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	fd, err := safeio.OpenBeneath(int(dir.Fd()), filepath.Base(path), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	switch {
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EXDEV):
		return nil, fmt.Errorf("ledger file %s is a symlink: %w", path, ErrUnsafeFile)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ledger file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("ledger file %s is not a regular file (%s): %w", path, st.Mode().Type(), ErrUnsafeFile)
	}
	return f, nil
}
