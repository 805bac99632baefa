package fsnode

import (
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// xattrArgs is struct xattr_args of getxattrat(2) (Linux 6.13+).
type xattrArgs struct {
	value uint64
	size  uint32
	flags uint32
}

// getxattrat reads attr of name in dirfd without following a final
// symlink, in one system call. No name is dirfd's directory itself (a
// worktree's .git, whose handle is the git directory's; see withRouted).
func getxattrat(dirfd int, name, attr string, dest []byte) (int, error) {
	p, err := syscall.BytePtrFromString(selfIfNoName(name))
	if err != nil {
		return 0, err
	}
	a, err := syscall.BytePtrFromString(attr)
	if err != nil {
		return 0, err
	}
	args := xattrArgs{size: uint32(len(dest))}
	if len(dest) > 0 {
		args.value = uint64(uintptr(unsafe.Pointer(&dest[0])))
	}
	r, _, e := syscall.Syscall6(unix.SYS_GETXATTRAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), unix.AT_SYMLINK_NOFOLLOW,
		uintptr(unsafe.Pointer(a)), uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args))
	runtime.KeepAlive(dest)
	runtime.KeepAlive(p)
	runtime.KeepAlive(a)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// listxattrat lists the attributes of name in dirfd (Linux 6.13+); no
// name is dirfd's directory itself.
func listxattrat(dirfd int, name string, dest []byte) (int, error) {
	p, err := syscall.BytePtrFromString(selfIfNoName(name))
	if err != nil {
		return 0, err
	}
	var buf unsafe.Pointer
	if len(dest) > 0 {
		buf = unsafe.Pointer(&dest[0])
	}
	r, _, e := syscall.Syscall6(unix.SYS_LISTXATTRAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), unix.AT_SYMLINK_NOFOLLOW,
		uintptr(buf), uintptr(len(dest)), 0)
	runtime.KeepAlive(dest)
	runtime.KeepAlive(p)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// selfIfNoName names directory dirfd itself where name is empty: an *at
// call given an empty name without AT_EMPTY_PATH fails with ENOENT, and
// "." reaches the directory whatever the call and the handle's mode.
func selfIfNoName(name string) string {
	if name == "" {
		return "."
	}
	return name
}
