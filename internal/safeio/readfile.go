package safeio

import (
	"errors"
	"fmt"
	"os"
	"slices"
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
	// The descriptor is used as it is: an *os.File would first try to
	// register it with the runtime's poller, a system call per file.
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("reading %s: not a regular file (%s); intentfs loads only regular files", rel, fileType(st.Mode))
	}
	if st.Size > max {
		return nil, fmt.Errorf("reading %s: %d bytes, more than the %d allowed: %w", rel, st.Size, max, ErrTooLarge)
	}
	// The file may grow while it is read: read one byte past the limit to
	// notice, rather than trusting the size above; the buffer is sized
	// for the file as it was, so a file that stays so is read in one go.
	data := make([]byte, 0, st.Size+1)
	for int64(len(data)) <= max {
		if len(data) == cap(data) {
			data = slices.Grow(data, 4096)
		}
		n, err := readRetrying(fd, data[len(data):min(int64(cap(data)), max+1)])
		data = data[:len(data)+n]
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", rel, err)
		}
		if n == 0 {
			break
		}
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("reading %s: more than the %d bytes allowed: %w", rel, max, ErrTooLarge)
	}
	return data, nil
}

// readRetrying is one read(2) of fd into b, retried on EINTR; 0 at the end
// of the file.
func readRetrying(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

// fileType names the type of a file mode as os.FileMode's Type does.
func fileType(mode uint32) os.FileMode {
	var st os.FileMode
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		st = os.ModeDir
	case syscall.S_IFLNK:
		st = os.ModeSymlink
	case syscall.S_IFIFO:
		st = os.ModeNamedPipe
	case syscall.S_IFSOCK:
		st = os.ModeSocket
	case syscall.S_IFCHR:
		st = os.ModeDevice | os.ModeCharDevice
	case syscall.S_IFBLK:
		st = os.ModeDevice
	}
	return st.Type()
}
