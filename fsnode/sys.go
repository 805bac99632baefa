package fsnode

import (
	"fmt"
	"path"
	"syscall"
	"unsafe"

	"github.com/intentfs/intentfs/internal/safeio"

	"golang.org/x/sys/unix"
)

// openBeneath opens rel below the source root without following any
// symlink; see safeio.
func openBeneath(rootFd int, rel string, flags int, mode uint32) (int, error) {
	return safeio.OpenBeneath(rootFd, rel, flags, mode)
}

// openDir opens directory rel as an O_PATH handle for *at calls.
func openDir(rootFd int, rel string) (int, error) {
	return openBeneath(rootFd, rel, unix.O_PATH|syscall.O_DIRECTORY, 0)
}

// splitRel splits a workspace-relative path into its directory and name.
func splitRel(rel string) (dir, name string) {
	dir, name = path.Split(rel)
	return path.Clean("/" + dir)[1:], name
}

// joinRel joins a workspace-relative directory and a name in it; an
// empty name is the directory itself (what an event on a directory's own
// attributes names).
func joinRel(dir, name string) string {
	switch {
	case dir == "":
		return name
	case name == "":
		return dir
	}
	return dir + "/" + name
}

// fstatat stats name in dirfd without following a final symlink.
func fstatat(dirfd int, name string, st *syscall.Stat_t) error {
	if name == "" {
		return syscall.Fstat(dirfd, st)
	}
	// syscall.Stat_t and unix.Stat_t are both generated from the kernel's
	// struct stat and have the same layout on Linux.
	return unix.Fstatat(dirfd, name, (*unix.Stat_t)(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW)
}

// hashOpenFlags open a file for hashing: reading it must not change its
// atime (see withoutNoatimeOnEPERM).
const hashOpenFlags = syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOATIME

// withoutNoatimeOnEPERM opens with flags (which include O_NOATIME) and,
// if that fails with EPERM, once more without O_NOATIME: the kernel allows
// O_NOATIME only to the file's owner or a holder of CAP_FOWNER, and a
// daemon without them still has to read the file; its atime moves then.
func withoutNoatimeOnEPERM(flags int, open func(flags int) (int, error)) (int, error) {
	fd, err := open(flags)
	if err == syscall.EPERM {
		fd, err = open(flags &^ syscall.O_NOATIME)
	}
	return fd, err
}

// openatForHash opens name in dirfd for hashing, never following a
// symlink.
func openatForHash(dirfd int, name string) (int, error) {
	return withoutNoatimeOnEPERM(hashOpenFlags|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, func(flags int) (int, error) {
		return unix.Openat(dirfd, name, flags, 0)
	})
}

// reopenReadOnly opens a second, read-only descriptor for the file behind
// fd, so a handle opened write-only can still be hashed.
func reopenReadOnly(fd int) (int, error) {
	p := fmt.Sprintf("/proc/self/fd/%d", fd)
	return withoutNoatimeOnEPERM(syscall.O_RDONLY|syscall.O_NOATIME|syscall.O_CLOEXEC, func(flags int) (int, error) {
		return syscall.Open(p, flags, 0)
	})
}

// CheckOpenat2 fails when the kernel lacks openat2(2) (Linux 5.6+), on
// which the daemon's symlink safety rests.
func CheckOpenat2(dir string) error {
	fd, err := syscall.Open(dir, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	fd2, err := openBeneath(fd, "", unix.O_PATH, 0)
	if err != nil {
		return fmt.Errorf("openat2 with RESOLVE_BENEATH is unavailable (Linux 5.6 or newer is required): %w", err)
	}
	return syscall.Close(fd2)
}
