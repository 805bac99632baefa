package fsnode

import (
	"context"
	"io"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

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
	return lockedThrough(f, lk, l.Setlk(ctx, owner, lk, flags))
}

// lockedThrough notes on f that a lock was taken through it, if errno
// says one was, and returns errno.
func lockedThrough(f fs.FileHandle, lk *fuse.FileLock, errno syscall.Errno) syscall.Errno {
	if file, ok := f.(*File); ok && errno == 0 && lk.Typ != syscall.F_UNLCK {
		file.locked.Store(true)
	}
	return errno
}

// releaseLocks drops the locks taken through f, before its descriptor is
// closed. Closing it is not enough on the passthrough path: the kernel
// reads and writes every open of a file through one backing file, the
// daemon's first handle of it, which later handles keep open; a flock or
// OFD lock held there would outlive its holder's close for as long as
// any other descriptor of the file stays open, and the next lock of the
// file, the human's included, would wait for it.
func (f *File) releaseLocks() {
	if !f.locked.Load() {
		return
	}
	_ = unix.Flock(f.fd, unix.LOCK_UN)
	whole := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart}
	_ = unix.FcntlFlock(uintptr(f.fd), unix.F_OFD_SETLK, &whole)
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
	return lockedThrough(f, lk, waitForLock(ctx, func() syscall.Errno { return l.Setlk(ctx, owner, lk, flags) }))
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
