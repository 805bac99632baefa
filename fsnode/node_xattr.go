package fsnode

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// withProcPath opens the node with O_PATH|O_NOFOLLOW and runs fn on its
// /proc/self/fd path. For a regular file or directory, the *xattr calls on
// that path reach the node itself and nothing else; a symlink's own
// extended attributes are not reachable this way and report ENOTSUP.
func (n *Node) withProcPath(fn func(p string) error) syscall.Errno {
	rel, ok := n.relPath()
	if !ok {
		return syscall.ENOENT
	}
	fd, err := n.root.openBeneath(rel, unix.O_PATH, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		return syscall.ENOTSUP
	}
	return fs.ToErrno(fn(fmt.Sprintf("/proc/self/fd/%d", fd)))
}

// Getxattr reads an extended attribute. The kernel asks for
// security.capability around every write, so this is a hot path: one
// getxattrat on the cached parent handle where the kernel has it.
func (n *Node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	var sz int
	if !n.IsRoot() && !n.root.noXattrAt.Load() {
		errno := n.withParent(func(dirfd int, name string) error {
			return n.asCallerOn(ctx, func() (err error) { sz, err = getxattrat(dirfd, name, attr, dest); return err })
		})
		if errno != syscall.ENOSYS {
			if errno == syscall.ENOTSUP && n.isSymlink() {
				errno = syscall.ENODATA
			}
			return uint32(sz), errno
		}
		n.root.noXattrAt.Store(true)
	}
	errno := n.withProcPath(func(p string) error {
		return n.asCallerOn(ctx, func() (err error) { sz, err = unix.Getxattr(p, attr, dest); return err })
	})
	if errno == syscall.ENOTSUP {
		errno = syscall.ENODATA
	}
	return uint32(sz), errno
}

// Listxattr lists extended attributes.
func (n *Node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	var sz int
	if !n.IsRoot() && !n.root.noXattrAt.Load() {
		errno := n.withParent(func(dirfd int, name string) error {
			return n.asCallerOn(ctx, func() (err error) { sz, err = listxattrat(dirfd, name, dest); return err })
		})
		if errno != syscall.ENOSYS {
			return uint32(sz), errno
		}
		n.root.noXattrAt.Store(true)
	}
	errno := n.withProcPath(func(p string) error {
		return n.asCallerOn(ctx, func() (err error) { sz, err = unix.Listxattr(p, dest); return err })
	})
	if errno == syscall.ENOTSUP {
		return 0, 0
	}
	return uint32(sz), errno
}

// Setxattr sets an extended attribute: a change to decide.
func (n *Node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return n.changeXattr(ctx, policy.OpSetxattr, attr, func(p string) error { return unix.Setxattr(p, attr, data, int(flags)) })
}

// Removexattr removes an extended attribute: a change to decide.
func (n *Node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return n.changeXattr(ctx, policy.OpRemovexattr, attr, func(p string) error { return unix.Removexattr(p, attr) })
}

func (n *Node) changeXattr(ctx context.Context, op policy.Op, attr string, fn func(p string) error) syscall.Errno {
	rel, ok := n.relPath()
	if !ok {
		return syscall.ENOENT
	}
	req := policy.Request{Op: op, Path: rel, IsDir: n.IsDir()}
	g, errno := n.root.authorize(ctx, req)
	if errno != 0 {
		return errno
	}
	if g.provisional && !provisionalXattr(attr) {
		return n.root.refuseProvisional(ctx, g, req)
	}
	if errno := n.withProcPath(func(p string) error { return n.root.asCaller(ctx, func() error { return fn(p) }) }); errno != 0 {
		return errno
	}
	n.root.record(g, ledger.Change{Event: ledger.EventXattr, Path: rel, Op: string(op) + " " + attr, Time: time.Now()})
	return 0
}

func (n *Node) isSymlink() bool { return n.StableAttr().Mode&syscall.S_IFMT == syscall.S_IFLNK }
