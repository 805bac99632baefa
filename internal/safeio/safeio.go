// Package safeio opens files below a root directory without ever following
// a symlink, so neither a symlink planted in the workspace nor a rename
// racing with a lookup can lead the (often root) daemon outside it.
package safeio

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// Resolve confines resolution to the root and refuses symlinks on the way.
const Resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// OpenBeneath opens rel (relative to rootFd, "" for the root itself)
// without following any symlink.
func OpenBeneath(rootFd int, rel string, flags int, mode uint32) (int, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{Flags: uint64(flags | syscall.O_CLOEXEC | syscall.O_NOFOLLOW), Resolve: Resolve}
	if flags&(syscall.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(mode)
	}
	for {
		fd, err := unix.Openat2(rootFd, rel, &how)
		if err == syscall.EINTR || err == syscall.EAGAIN {
			continue // EAGAIN: a concurrent rename raced the lookup
		}
		return fd, err
	}
}

// ReadPrefix reads at most limit bytes of the regular file rel below root.
func ReadPrefix(root, rel string, limit int) ([]byte, error) {
	rootFd, err := syscall.Open(root, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(rootFd)
	fd, err := OpenBeneath(rootFd, rel, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	// The buffer is sized by the file, not by limit: callers pass a huge
	// limit to mean "all of it", and a buffer of that many bytes would
	// cost gigabytes for every small file (blame reads each version).
	// One byte more than the size lets the read see end of file without
	// growing the buffer.
	buf := make([]byte, 0, min(st.Size()+1, int64(limit)))
	for len(buf) < limit {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(cap(buf), limit-len(buf))) // it grew while read
		}
		n, err := f.Read(buf[len(buf):min(cap(buf), limit)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// HashFile returns "sha256:<hex>" of the regular file rel below root,
// read without following symlinks.
func HashFile(root, rel string) (string, error) {
	rootFd, err := syscall.Open(root, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer syscall.Close(rootFd)
	fd, err := OpenBeneath(rootFd, rel, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	// A device (/dev/zero) would be hashed forever.
	if st, err := f.Stat(); err != nil {
		return "", err
	} else if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", rel)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Replace replaces path with data atomically (WriteTemp, then rename).
// The new file keeps the owner, group and mode of the one it replaces, or
// gets its directory's owner and group and mode if there is none; a
// symlink at path is replaced, never followed.
func Replace(path string, data []byte, mode os.FileMode) error {
	tmp, err := WriteTemp(path, data, mode)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteTemp writes data to a new temporary file beside path, fsync'ed and
// closed, and returns its name: the first half of an atomic replacement
// (rename it over path). The file gets the owner, group and mode of the
// regular file at path, or, if there is none, its directory's owner and
// group and mode (see OwnerFor).
func WriteTemp(path string, data []byte, mode os.FileMode) (string, error) {
	owner, err := OwnerFor(path, mode)
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = owner.Set(int(f.Fd()))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Name(), nil
}

// ErrSymlink is wrapped by OpenDir's error for a symlink in the
// directory's place.
var ErrSymlink = errors.New("it is a symlink, and intentfs never follows a symlink in a workspace (a clone can carry one that points anywhere)")

// OpenDir opens the directory at path (O_PATH) without following a
// symlink in its final component: the components above are the path a
// person named, a directory inside the workspace is what a clone brings.
// A symlink there gives an error wrapping ErrSymlink that names its
// target.
func OpenDir(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		return fd, nil
	}
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) {
		if target, lerr := os.Readlink(path); lerr == nil {
			return -1, fmt.Errorf("%s -> %s: %w", path, target, ErrSymlink)
		}
	}
	return -1, &os.PathError{Op: "open", Path: path, Err: err}
}
