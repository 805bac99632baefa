package fsnode

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The daemon's baseline is Linux 5.6 (openat2). A few system calls it
// prefers are newer: fchmodat2 (6.6), getxattrat and listxattrat (6.13).
// The kernel may lack them, and a container's seccomp profile may refuse
// them although the kernel has them: podman's answers ENOSYS for calls it
// does not know, Docker's EPERM. Each has a fallback that is as safe, and
// NewRoot probes once which to use (see probeNewSyscalls), because an
// EPERM at run time cannot be told from a real one.

// newSyscalls says which of the newer system calls the daemon may make.
type newSyscalls struct {
	fchmodat2, xattrAt bool
}

// probeNewSyscalls asks for each call with arguments the kernel refuses
// (an empty path): a kernel that has the call and a filter that lets it
// through answer ENOENT or EBADF, a missing call or a filter ENOSYS or
// EPERM, before any argument is looked at.
func probeNewSyscalls() newSyscalls {
	empty, _ := syscall.BytePtrFromString("")
	attr, _ := syscall.BytePtrFromString("user.intentfs-probe")
	var args xattrArgs
	_, _, e1 := syscall.Syscall6(unix.SYS_FCHMODAT2, ^uintptr(0), uintptr(unsafe.Pointer(empty)), 0o644, unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	_, _, e2 := syscall.Syscall6(unix.SYS_GETXATTRAT, ^uintptr(0), uintptr(unsafe.Pointer(empty)), unix.AT_SYMLINK_NOFOLLOW,
		uintptr(unsafe.Pointer(attr)), uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args))
	runtime.KeepAlive(empty)
	runtime.KeepAlive(attr)
	return newSyscalls{fchmodat2: !refusedCall(e1), xattrAt: !refusedCall(e2)}
}

// refusedCall is the answer of a missing system call or of a seccomp
// filter that refuses it.
func refusedCall(e syscall.Errno) bool { return e == syscall.ENOSYS || e == syscall.EPERM }

// chmodAt changes the mode of name in dirfd without following a final
// symlink (EOPNOTSUPP for a symlink, as the kernel answers), as the
// calling thread's credentials. With fchmodat2 unavailable it does what
// glibc does: it opens the entry itself (O_PATH|O_NOFOLLOW, one
// component relative to dirfd, so no path is resolved twice), refuses a
// symlink, and changes the mode of the inode it holds through its
// /proc/self/fd link (fchmod refuses O_PATH descriptors).
func chmodAt(dirfd int, name string, mode uint32, fchmodat2 bool) error {
	if fchmodat2 {
		err := fchmodat2NoFollow(dirfd, name, mode)
		if err != syscall.ENOSYS {
			return err
		}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.EOPNOTSUPP
	}
	// flags 0: the plain fchmodat, which every profile allows. The magic
	// link leads to the inode fd holds, which is no symlink.
	return unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), mode, 0)
}

// fchmodat2NoFollow is fchmodat2(dirfd, name, mode, AT_SYMLINK_NOFOLLOW)
// with the kernel's answer as is: x/sys's Fchmodat turns ENOSYS into
// EOPNOTSUPP, which cannot be told from a symlink's.
func fchmodat2NoFollow(dirfd int, name string, mode uint32) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, e := syscall.Syscall6(unix.SYS_FCHMODAT2, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(mode), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	runtime.KeepAlive(p)
	if e != 0 {
		return e
	}
	return nil
}
