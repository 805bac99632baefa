package fsnode

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
)

// ioctls the kernel forwards run in the daemon: with its credentials, on
// its descriptor, and with any descriptor number in the argument looked up
// in its descriptor table (which holds the ledger). None of that is the
// caller's, and none of it passes through the policy, so every ioctl is
// refused with ENOTTY ("not supported here") except the reviewed list
// below. Each entry must only read, and its argument must be a buffer the
// kernel sizes from the command, never a number the daemon would
// interpret (a descriptor, an offset into something else).
//
// FIONREAD, FIGETBSZ, FIBMAP, FS_IOC_FIEMAP, FICLONE, FICLONERANGE and
// FIDEDUPERANGE never reach here: the kernel answers or refuses them
// itself for a FUSE file.
const (
	// fsIocGetflags is FS_IOC_GETFLAGS, _IOR('f', 1, long): the inode
	// flags (lsattr). Read-only; the kernel copies the answer out.
	fsIocGetflags = 0x80086601
	// fsIocFsgetxattr is FS_IOC_FSGETXATTR, _IOR('X', 31, struct
	// fsxattr): the extended inode flags and project id (lsattr -p,
	// xfs_io stat). Read-only; the kernel also sends it to read flags.
	fsIocFsgetxattr = 0x801c581f
)

// allowedIoctl reports whether cmd is on the reviewed list, and the size
// of the buffer the answer needs.
func allowedIoctl(cmd uint32) (size int, ok bool) {
	switch cmd {
	case fsIocGetflags:
		// The command says long, but filesystems (and the kernel's own
		// request for lsattr) use an int.
		return 4, true
	case fsIocFsgetxattr:
		return 28, true
	}
	return 0, false
}

// Ioctl answers the reviewed read-only ioctls on files and directories
// alike (go-fuse asks the node before the handle, so this covers the
// directory handles of OpendirHandle too) and refuses every other one.
func (n *Node) Ioctl(ctx context.Context, f fs.FileHandle, cmd uint32, arg uint64, input []byte, output []byte) (int32, syscall.Errno) {
	size, ok := allowedIoctl(cmd)
	if !ok || len(output) < size {
		return 0, syscall.ENOTTY
	}
	h, ok := f.(fs.FileIoctler)
	if !ok {
		return 0, syscall.ENOTTY
	}
	return h.Ioctl(ctx, cmd, arg, input, output)
}

// Ioctl applies the same list on the file handle, so no path through
// go-fuse reaches the loopback's unrestricted Ioctl.
func (f *File) Ioctl(ctx context.Context, cmd uint32, arg uint64, input []byte, output []byte) (int32, syscall.Errno) {
	size, ok := allowedIoctl(cmd)
	if !ok || len(output) < size {
		return 0, syscall.ENOTTY
	}
	return f.LoopbackFile.Ioctl(ctx, cmd, arg, input, output)
}
