package fsnode

import (
	"context"
	"syscall"
	"time"

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
	if lk.Typ == syscall.F_UNLCK {
		l, ok := f.(fs.FileSetlkwer)
		if !ok {
			return syscall.ENOTSUP
		}
		return l.Setlkw(ctx, owner, lk, flags)
	}
	l, ok := f.(fs.FileSetlker)
	if !ok {
		return syscall.ENOTSUP
	}
	return waitForLock(ctx, func() syscall.Errno { return l.Setlk(ctx, owner, lk, flags) })
}

// lockRetryMax bounds the pause between tries of a lock that is held.
const lockRetryMax = 50 * time.Millisecond

// waitForLock takes a lock by trying without waiting until it is free,
// or until the caller is interrupted (EINTR). A blocking flock(2) or
// F_OFD_SETLKW in the daemon cannot be interrupted: the caller's signal
// reaches the daemon as an INTERRUPT, which cancels ctx, and a lock
// another process holds on (an agent's, say) would keep a human's
// `flock -w 5` or Ctrl-C waiting as long as that process chose.
func waitForLock(ctx context.Context, try func() syscall.Errno) syscall.Errno {
	pause := time.Millisecond
	for {
		errno := try()
		if errno != syscall.EWOULDBLOCK && errno != syscall.EAGAIN && errno != syscall.EACCES {
			return errno
		}
		select {
		case <-ctx.Done():
			return syscall.EINTR
		case <-time.After(pause):
		}
		pause = min(2*pause, lockRetryMax)
	}
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
