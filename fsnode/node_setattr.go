package fsnode

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// setattrOp names the most significant change a SETATTR carries, with its
// ledger event: truncate, then chmod, chown, utimes.
func setattrOp(in *fuse.SetAttrIn) (policy.Op, ledger.Event, bool) {
	_, size := in.GetSize()
	_, mode := in.GetMode()
	_, uid := in.GetUID()
	_, gid := in.GetGID()
	_, atime := in.GetATime()
	_, mtime := in.GetMTime()
	switch {
	case size:
		return policy.OpTruncate, ledger.EventTruncate, true
	case mode:
		return policy.OpChmod, ledger.EventChmod, true
	case uid || gid:
		return policy.OpChown, ledger.EventChown, true
	case atime || mtime || in.Valid&(fuse.FATTR_ATIME_NOW|fuse.FATTR_MTIME_NOW) != 0:
		return policy.OpUtimes, ledger.EventUtimes, true
	}
	return "", "", false
}

// Setattr changes size, mode, owner or times. Each is a change to decide.
func (n *Node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	errno := n.setattr(ctx, f, in, out)
	_, viaFd := in.GetFh()
	if _, resizes := in.GetSize(); resizes && !viaFd {
		// A truncation by path (truncate(2), an O_TRUNC open on the
		// cached data path): the kernel walks the path again
		// (staleIfGone). Through a descriptor, the file simply has no
		// name left; other changes keep their answer.
		return staleIfGone(errno)
	}
	return errno
}

func (n *Node) setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	op, ev, changes := setattrOp(in)
	if !changes {
		return n.Getattr(ctx, f, out)
	}
	rel, ok := n.relPath()
	if !ok {
		return syscall.ENOENT
	}
	req := policy.Request{Op: op, Path: rel, IsDir: n.IsDir()}
	var destroyed func() (int64, bool)
	if sz, ok := in.GetSize(); ok {
		destroyed = n.root.destroys(&req, n.selfStat(f), int64(sz))
	}
	g, errno := n.root.authorizeSized(ctx, req, destroyed)
	if errno != 0 {
		return errno
	}
	if lf, ok := f.(*File); ok && lf != nil && g.traced() && onlyResizes(in) {
		if folded, errno := n.truncateInto(ctx, lf, rel, g, in, out); folded {
			return errno
		}
	}
	if f == nil && n.root.cached && !n.IsDir() && g.traced() && onlyResizes(in) {
		if folded, errno := n.truncateThroughWriter(ctx, rel, g, in, out); folded {
			return errno
		}
	}
	c := ledger.Change{Event: ev, Path: rel, Op: "setattr"}
	if _, size := in.GetSize(); size && g.traced() {
		// As an open with O_TRUNC: the handles open on the file are
		// recorded first, with what they wrote, and follow the truncate's
		// record after it (see File.checkpoint).
		n.writeMu.Lock()
		defer n.writeMu.Unlock()
		n.checkpointOpenLocked()
		pre, kept, err := n.root.preImageAt(rel, callerUID(ctx))
		if err != nil {
			return n.root.failChange(ctx, req, err)
		}
		c.PreHash, c.PreImage = pre.Hash, kept
	}
	// As the caller: chmod, chown and utimes are for a file's owner, and
	// the kernel checked the inode it resolved, not what the name may be
	// by now.
	if lf, ok := f.(*File); ok && lf != nil {
		err := n.root.asCaller(ctx, func() error { return errnoAsError(lf.LoopbackFile.Setattr(ctx, in, out)) })
		errno = fs.ToErrno(err)
	} else {
		errno = n.withParent(func(dirfd int, name string) error {
			return n.asCallerOn(ctx, func() error { return setattrAt(dirfd, name, in, !n.root.noFchmodat2.Load()) })
		})
		if errno == 0 {
			errno = n.Getattr(ctx, nil, out)
		}
	}
	if errno != 0 {
		return errno
	}
	caller, _ := fuse.FromContext(ctx)
	if _, setsMode := in.GetMode(); !setsMode && in.Valid&fuse.FATTR_KILL_SUIDGID != 0 && hasSetID(out.Attr.Mode, caller) {
		// The kernel leaves this to us (HANDLE_KILLPRIV_V2): an
		// unprivileged chown or truncate clears set-ID bits. The change
		// itself has been made, so it is recorded below whatever happens
		// here; a failure is logged for the operator.
		errno := n.withParent(func(dirfd int, name string) error {
			fd, err := unix.Openat(dirfd, selfIfNoName(name), unix.O_PATH|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer syscall.Close(fd)
			rfd, err := reopenReadOnly(fd)
			if err != nil {
				return err
			}
			defer syscall.Close(rfd)
			return killSuidGid(rfd, caller)
		})
		if errno != 0 {
			n.root.log.Error("clearing set-ID bits failed", "path", rel, "err", errno)
		} else if errno := n.Getattr(ctx, nil, out); errno != 0 {
			// out keeps the attributes from before the bits were cleared;
			// the kernel caches them for at most the attribute timeout.
			n.root.log.Warn("reading attributes after clearing set-ID bits failed", "path", rel, "err", errno)
		}
	}
	if m, ok := in.GetMode(); ok {
		c.Mode = fmt.Sprintf("%04o", m&07777)
	}
	// A session's own chmod or truncate is no change behind its back.
	g.actor.sawAt(n.root, rel)
	if op != policy.OpTruncate && n.absorbIntoCreation(g, c.Mode) {
		return 0
	}
	if _, size := in.GetSize(); size && g.traced() {
		post, errno := n.root.digestAt(rel)
		if errno == 0 {
			c.PostHash, c.Lines = post.Hash, post.Lines
			// The truncate is recorded here; the handles open on the file,
			// the one that truncated it included, must not record it
			// again at their release.
			n.followOpen(post)
		}
	}
	c.Time = time.Now()
	n.root.record(g, c)
	return 0
}

// onlyResizes reports whether a SETATTR changes the size and nothing the
// ledger records apart from content (mode, owner).
func onlyResizes(in *fuse.SetAttrIn) bool {
	_, size := in.GetSize()
	_, mode := in.GetMode()
	_, uid := in.GetUID()
	_, gid := in.GetGID()
	return size && !mode && !uid && !gid
}

// truncateInto resizes the file through lf, the writer's own handle, as
// part of the change that handle is making, and reports whether it did:
// an editor that truncates the file it opened and writes it whole (vim's
// backupcopy=yes: open, ftruncate, write) makes one change, recorded at
// release against the content before the truncate, whose bytes the open
// kept. A record of the emptied file in between would make the rewrite
// look like new content, every unchanged line included. It declines
// (false) whenever the truncate must be recorded on its own: another
// tracked handle is open on the file, or the truncate is not the
// handle's writer's under the same decision.
func (n *Node) truncateInto(ctx context.Context, lf *File, rel string, g grant, in *fuse.SetAttrIn, out *fuse.AttrOut) (bool, syscall.Errno) {
	t := lf.track.Load()
	if t == nil || g.after != nil || g.upstream != nil || g.stale != "" {
		return false, 0
	}
	n.writeMu.Lock()
	defer n.writeMu.Unlock()
	if len(n.otherTracked(t)) > 0 || !t.folds(g) {
		return false, 0
	}
	err := n.root.asCaller(ctx, func() error { return errnoAsError(lf.LoopbackFile.Setattr(ctx, in, out)) })
	if errno := fs.ToErrno(err); errno != 0 {
		return true, errno
	}
	// Whatever the stat says now, the release hashes the file: a
	// truncate and rewrite can leave the size and times it had.
	t.mu.Lock()
	t.baseKey = objects.Version{}
	t.mu.Unlock()
	// A session's own truncate is no change behind its back.
	g.actor.sawAt(n.root, rel)
	return true, 0
}

// truncateThroughWriter folds a truncation with no handle (the cached
// data path, where an O_TRUNC open arrives as a SETATTR and no OPEN) into
// the caller's writer of the file, opened and decided as its first WRITE
// would be (cachedWriterFor): the truncation and the writes after it are
// one change, recorded once they pause, from the content before the
// truncation, as the passthrough path records an O_TRUNC open and its
// writes (truncateInto). It declines (false) where truncateInto does.
// A writer that has written is recorded first: what it wrote is a version
// of its own (`echo a > f; echo b > f` in one shell leaves two), not to
// be lost under the next.
func (n *Node) truncateThroughWriter(ctx context.Context, rel string, g grant, in *fuse.SetAttrIn, out *fuse.AttrOut) (bool, syscall.Errno) {
	n.cachedMu.Lock()
	if cw := n.cw; cw != nil && cw.wrote {
		n.endCachedWriterLocked()
	}
	n.cachedMu.Unlock()
	w, errno := n.cachedWriterFor(ctx)
	if errno != 0 {
		return true, errno
	}
	defer n.cachedMu.Unlock()
	lf, ok := w.(*File)
	if !ok {
		return false, 0
	}
	folded, errno := n.truncateInto(ctx, lf, rel, g, in, out)
	if folded && errno == 0 && n.cw != nil && !n.cw.wrote {
		n.cw.truncated = true
	}
	return folded, errno
}

// setattrAt applies a SETATTR to name in dirfd without following a final
// symlink: chmod of a symlink is refused (EOPNOTSUPP), truncate opens the
// file with O_NOFOLLOW. fchmodat2 says whether chmod may use fchmodat2(2)
// (see chmodAt).
func setattrAt(dirfd int, name string, in *fuse.SetAttrIn, fchmodat2 bool) error {
	if name == "" {
		name = "." // the root: dirfd is its own handle
	}
	if m, ok := in.GetMode(); ok {
		if err := chmodAt(dirfd, name, m, fchmodat2); err != nil {
			return err
		}
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok || gok {
		su, sg := -1, -1
		if uok {
			su = int(uid)
		}
		if gok {
			sg = int(gid)
		}
		if err := unix.Fchownat(dirfd, name, su, sg, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	// Truncate before the times, so an explicit mtime is not clobbered.
	if sz, ok := in.GetSize(); ok {
		fd, err := unix.Openat(dirfd, name, syscall.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		err = syscall.Ftruncate(fd, int64(sz))
		syscall.Close(fd)
		if err != nil {
			return err
		}
	}
	mtime, mok := in.GetMTime()
	atime, aok := in.GetATime()
	if mok || aok || in.Valid&(fuse.FATTR_ATIME_NOW|fuse.FATTR_MTIME_NOW) != 0 {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if aok {
			ts[0] = unix.NsecToTimespec(atime.UnixNano())
		} else if in.Valid&fuse.FATTR_ATIME_NOW != 0 {
			ts[0] = unix.Timespec{Nsec: unix.UTIME_NOW}
		}
		if mok {
			ts[1] = unix.NsecToTimespec(mtime.UnixNano())
		} else if in.Valid&fuse.FATTR_MTIME_NOW != 0 {
			ts[1] = unix.Timespec{Nsec: unix.UTIME_NOW}
		}
		if err := unix.UtimesNanoAt(dirfd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	return nil
}

// Allocate (fallocate) can change a file's size and content.
func (n *Node) Allocate(ctx context.Context, f fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	rel, ok := n.relPath()
	if !ok {
		return syscall.ENOENT
	}
	if _, errno := n.root.authorize(ctx, policy.Request{Op: policy.OpFallocate, Path: rel}); errno != 0 {
		return errno
	}
	if f == nil {
		// The cached data path: through the node's writer, which keeps
		// the pre-image and records the change.
		w, errno := n.cachedWriterFor(ctx)
		if errno != 0 {
			return errno
		}
		defer n.cachedMu.Unlock()
		f = w
	}
	fa, ok := f.(fs.FileAllocater)
	if !ok {
		return syscall.EBADF
	}
	// The handle was opened for writing and is tracked: its release
	// records the content change. Allocating as the caller keeps root's
	// reserved blocks out of its reach.
	return fs.ToErrno(n.root.asCaller(ctx, func() error { return errnoAsError(fa.Allocate(ctx, off, size, mode)) }))
}

// CopyFileRange copies between two open files of the mount. Writing into
// the destination is decided; its handle records the content change.
func (n *Node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle,
	offOut uint64, length uint64, flags uint64) (uint32, syscall.Errno) {
	if flags != 0 {
		return 0, syscall.EINVAL // copy_file_range(2) defines no flags: none has a modelled effect
	}
	dst, ok := out.Operations().(*Node)
	if !ok {
		return 0, syscall.EXDEV
	}
	rel, ok := dst.relPath()
	if !ok {
		return 0, syscall.ENOENT
	}
	if _, errno := n.root.authorize(ctx, policy.Request{Op: policy.OpCopyFileRange, Path: rel}); errno != 0 {
		return 0, errno
	}
	if fhOut == nil {
		// The cached data path: into the destination's writer.
		w, errno := dst.cachedWriterFor(ctx)
		if errno != 0 {
			return 0, errno
		}
		defer dst.cachedMu.Unlock()
		fhOut = w
	}
	o, ok := fhOut.(*File)
	if !ok {
		return 0, syscall.EBADF
	}
	oi, oo := int64(offIn), int64(offOut)
	var count int
	if fhIn == nil {
		// From the daemon's read descriptor: the kernel checked the
		// caller's read access when it opened the source file.
		errno := n.withReadFd(func(rfd int) error {
			return n.root.asCaller(ctx, func() (err error) {
				count, err = unix.CopyFileRange(rfd, &oi, o.fd, &oo, int(length), int(flags))
				return err
			})
		})
		return uint32(count), errno
	}
	in, ok := fhIn.(*File)
	if !ok {
		return 0, syscall.EBADF
	}
	err := n.root.asCaller(ctx, func() (err error) {
		count, err = unix.CopyFileRange(in.fd, &oi, o.fd, &oo, int(length), int(flags))
		return err
	})
	return uint32(count), fs.ToErrno(err)
}
