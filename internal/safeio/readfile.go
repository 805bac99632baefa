package safeio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrTooLarge is wrapped by ReadFile's error for a file over its limit.
var ErrTooLarge = errors.New("file is too large")

// ReadFile reads the whole regular file rel below the directory root, for
// the files the daemon loads from a workspace an agent can shape (the
// policy, the ignore files, sidecars, git's HEAD). It never follows a
// symlink on the way (a link to a root-only file must not be read by the
// root daemon), never blocks (a FIFO in the file's place would hang the
// reader and whatever lock it holds), and refuses anything that is not a
// regular file or is larger than max bytes (/dev/zero would grow memory
// until the daemon died). A missing file gives an error that matches
// os.ErrNotExist. Errors name rel but never quote the file's content.
func ReadFile(root, rel string, max int64) ([]byte, error) {
	rootFd, err := syscall.Open(root, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	defer syscall.Close(rootFd)
	return ReadFileAt(rootFd, rel, max)
}

// ReadFileAt is ReadFile of rel below the directory handle rootFd.
func ReadFileAt(rootFd int, rel string, max int64) ([]byte, error) {
	fd, err := OpenBeneath(rootFd, rel, syscall.O_RDONLY|syscall.O_NONBLOCK|unix.O_NOCTTY, 0)
	switch {
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EXDEV):
		return nil, fmt.Errorf("reading %s: it is reached through a symlink, which intentfs does not follow in the workspace: %w", rel, err)
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("reading %s: not a regular file (%s); intentfs loads only regular files", rel, st.Mode().Type())
	}
	if st.Size() > max {
		return nil, fmt.Errorf("reading %s: %d bytes, more than the %d allowed: %w", rel, st.Size(), max, ErrTooLarge)
	}
	// The file may grow while it is read: read one byte past the limit to
	// notice, rather than trusting the size above.
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("reading %s: more than the %d bytes allowed: %w", rel, max, ErrTooLarge)
	}
	return data, nil
}
