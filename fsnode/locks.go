package fsnode

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/policy"
)

// Locks taken through the mount (flock, POSIX and OFD locks: the kernel
// sends them all as SETLK/SETLKW) are taken on the source file, so they
// exclude the daemon and the humans' commands, which lock the source
// directly. The node decides them before the handle takes them: a lock
// on a file intentfs itself locks would let the agent make the humans'
// commands wait, and is refused (policy.DecideLock). Queries (GETLK) and
// unlocks pass: they hold nothing.

// Setlk takes or releases a lock without waiting.
func (n *Node) Setlk(ctx context.Context, f fs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	if errno := n.mayLock(ctx, lk); errno != 0 {
		return errno
	}
	l, ok := f.(fs.FileSetlker)
	if !ok {
		return syscall.ENOTSUP
	}
	return l.Setlk(ctx, owner, lk, flags)
}

// Setlkw takes a lock, waiting for it, or releases one.
func (n *Node) Setlkw(ctx context.Context, f fs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	if errno := n.mayLock(ctx, lk); errno != 0 {
		return errno
	}
	l, ok := f.(fs.FileSetlkwer)
	if !ok {
		return syscall.ENOTSUP
	}
	return l.Setlkw(ctx, owner, lk, flags)
}

// mayLock decides a lock request on n; a refusal is a denial like any
// other (logged, recorded, readable in .intentfs/denials) and EACCES.
func (n *Node) mayLock(ctx context.Context, lk *fuse.FileLock) syscall.Errno {
	if lk.Typ == syscall.F_UNLCK {
		return 0
	}
	rel, ok := n.relPath()
	if !ok {
		return syscall.ENOENT
	}
	d := policy.DecideLock(rel)
	if d.Allow {
		return 0
	}
	return n.root.refuse(ctx, policy.Request{Op: policy.OpLock, Path: rel}, d.Code, d.Reason, syscall.EACCES)
}
