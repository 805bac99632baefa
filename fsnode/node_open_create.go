package fsnode

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/policy"
)

// openFlags are the FOPEN flags of every file handle. FOPEN_NOFLUSH: the
// kernel sends no FLUSH at close(2). A FLUSH would cost a round trip per
// close and has nothing to do here: the source is written through at once
// (no write-back cache), locks are open-file-description locks released
// with the handle, and the audit record is made at RELEASE.
const openFlags = fuse.FOPEN_NOFLUSH

// opensForWrite reports whether open flags can change the file: write
// access, or O_TRUNC even with O_RDONLY.
func opensForWrite(flags uint32) bool {
	return flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0
}

// cleanOpenFlags drops flags the kernel has already acted on: O_APPEND
// offsets are kept by the kernel, and FMODE_EXEC is not an open flag.
func cleanOpenFlags(flags uint32) int {
	return int(flags &^ (syscall.O_APPEND | fuse.FMODE_EXEC | syscall.O_CREAT | syscall.O_EXCL))
}

// staleIfGone turns ENOENT from a change on a node the kernel found by
// its entry into ESTALE: the file is gone from the source (removed there,
// or by intentfs, before the kernel's entry expired), and on ESTALE the
// kernel walks the path again, asking the daemon, and retries once. An
// open with O_CREAT then creates the file, as on a disk; any other call
// gets ENOENT from the new lookup. Without it, `> file` right after the
// file's removal in the source failed ENOENT. A read-only open keeps
// ENOENT: a file renamed over twice in a row (a tool saving in a loop)
// would leave the retry's ESTALE to a reader, an answer no local
// filesystem gives (go-fuse's OpenSymlinkRace).
func staleIfGone(errno syscall.Errno) syscall.Errno {
	if errno == syscall.ENOENT {
		return syscall.ESTALE
	}
	return errno
}

// Open opens the file, counting the handle against the caller's share.
func (n *Node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	uid, errno := n.root.takeHandle(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	fh, fl, errno := n.openFile(ctx, flags)
	if errno != 0 {
		n.root.handles.give(uid)
		if opensForWrite(flags) {
			errno = staleIfGone(errno)
		}
		return nil, 0, errno
	}
	fh.(handleHolder).heldBy(&n.root.handles, uid)
	return fh, fl, 0
}

// openFile opens an existing file. Reads are never decided; an open that can
// write is, and its handle is tracked.
func (n *Node) openFile(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	rel, ok := n.relPath()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	if !opensForWrite(flags) {
		fd, err := n.root.openBeneath(rel, cleanOpenFlags(flags), 0)
		if err != nil {
			return nil, 0, fs.ToErrno(err)
		}
		// A session's read is what a later write of it is checked
		// against (see staleTarget).
		caller, _ := fuse.FromContext(ctx)
		n.root.actorOf(caller).sawFd(rel, fd)
		return newFile(n, fd, nil), openFlags, 0
	}
	req := policy.Request{Op: policy.OpOpenWrite, Path: rel}
	var destroyed func() (int64, bool)
	if flags&syscall.O_TRUNC != 0 {
		destroyed = n.root.destroys(&req, n.selfStat(nil), 0)
	}
	g, errno := n.root.authorizeSized(ctx, req, destroyed)
	if errno != 0 {
		return nil, 0, errno
	}
	if g.provisional {
		return n.openProvisional(ctx, rel, g, flags)
	}
	var pre objects.Digest
	var kept string
	if g.traced() {
		// The handles already open on the file are recorded first, with
		// the content they left, which O_TRUNC is about to destroy; and
		// none is recorded again until this one is registered (see
		// File.checkpoint).
		n.writeMu.Lock()
		defer n.writeMu.Unlock()
		n.checkpointOpenAsDaemon(ctx)
		// The pre-image must be taken before O_TRUNC or a write destroys
		// it, by the daemon: the caller may be unable to read the file.
		uid := callerUID(ctx)
		if err := n.root.asDaemon(ctx, func() error {
			var err error
			pre, kept, err = n.root.preImageAt(rel, uid)
			return err
		}); err != nil {
			return nil, 0, n.root.failChange(ctx, req, err)
		}
	}
	// Until its handle is counted, no removal links this file into the
	// store (see writerGate).
	defer n.root.writeGate.beginOpen()()
	fd, err := n.root.openBeneath(rel, cleanOpenFlags(flags), 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	n.root.killSuidGidOrLog(ctx, fd, rel)
	if !g.traced() {
		return newExemptWriter(ctx, n, fd), openFlags, 0
	}
	t := newTracking(n, rel, g, false, pre, kept)
	t.truncated = flags&syscall.O_TRUNC != 0
	return newFile(n, fd, t), openFlags, 0
}

// digestAt hashes the file at rel through a read-only descriptor.
func (r *Root) digestAt(rel string) (objects.Digest, syscall.Errno) {
	fd, err := withoutNoatimeOnEPERM(hashOpenFlags, func(flags int) (int, error) { return r.openBeneath(rel, flags, 0) })
	if err != nil {
		return objects.Digest{}, fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	d, err := r.hashes.HashFd(fd)
	return d, fs.ToErrno(err)
}

// Create creates and opens a file, counting the handle against the
// caller's share.
func (n *Node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	uid, errno := n.root.takeHandle(ctx)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	in, fh, fl, errno := n.createFile(ctx, name, flags, mode, out)
	if errno != 0 {
		n.root.handles.give(uid)
		return nil, nil, 0, errno
	}
	fh.(handleHolder).heldBy(&n.root.handles, uid)
	if n.root.cached {
		if c, ok := in.Operations().(*Node); ok && c.adoptCreated(ctx, fh) {
			return in, nil, fl, 0 // see adoptCreated
		}
	}
	return in, fh, fl, 0
}

// createFile creates and opens a file. If it already exists (O_CREAT without
// O_EXCL), it is an open for writing of the existing file.
func (n *Node) createFile(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	req := policy.Request{Op: policy.OpCreate}
	if flags&syscall.O_TRUNC != 0 && flags&syscall.O_EXCL == 0 {
		n.root.destroys(&req, n.childStat(name), 0) // an existing file opened with O_TRUNC
	}
	rel, g, errno := n.authorizeChild(ctx, name, syscall.EEXIST, req)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if g.upstream != nil {
		return n.createUpstream(ctx, name, rel, g, mode, out)
	}
	if g.provisional {
		return n.createProvisional(ctx, name, rel, g, flags, mode, out)
	}
	var (
		fd      = -1
		st      syscall.Stat_t
		created bool
		pre     objects.Digest
		kept    string
		// unlockChild releases the existing file's writeMu once the new
		// handle is registered.
		unlockChild = func() {}
		// endOpen lets removals link pre-images again once the handle
		// on an existing file is counted (see writerGate).
		endOpen = func() {}
		// lostErr is the version this open would truncate, which the
		// store could not keep: the open is refused.
		lostErr error
	)
	defer func() { endOpen(); unlockChild() }()
	dirRel, _ := splitRel(rel)
	errno = n.withChild(name, func(dirfd int, name string) error {
		// The whole request runs as the caller (see CallerScope).
		if err := n.root.callerReaches(ctx, dirRel); err != nil {
			return err
		}
		var err error
		fd, err = unix.Openat(dirfd, name, cleanOpenFlags(flags)|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
		switch {
		case err == nil:
			created = true
		case err != syscall.EEXIST || flags&syscall.O_EXCL != 0:
			return err
		default:
			if g.traced() {
				// As in openFile: the handles open on the file are
				// recorded before this open can truncate it.
				if c := n.childNode(name); c != nil {
					c.writeMu.Lock()
					unlockChild = c.writeMu.Unlock
					c.checkpointOpenAsDaemon(ctx)
				}
				// The daemon keeps the version the open may truncate.
				if err := n.root.asDaemon(ctx, func() error {
					rfd, err := openatForHash(dirfd, name)
					if err != nil {
						return err
					}
					defer syscall.Close(rfd)
					if pre, err = n.root.hashes.HashFd(rfd); err != nil {
						return err
					}
					if kept, err = n.root.keep(rfd, pre, callerUID(ctx)); err != nil {
						lostErr = &preImageLost{err}
						return syscall.ENOSPC // the cause is lostErr, answered below
					}
					return nil
				}); err != nil {
					return err
				}
			}
			endOpen = n.root.writeGate.beginOpen()
			if fd, err = unix.Openat(dirfd, name, cleanOpenFlags(flags)|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0); err != nil {
				return err
			}
			n.root.killSuidGidOrLog(ctx, fd, rel)
		}
		return syscall.Fstat(fd, &st)
	})
	if lostErr != nil {
		return nil, nil, 0, n.root.failChange(ctx, policy.Request{Op: policy.OpOpenWrite, Path: rel}, lostErr)
	}
	if errno != 0 {
		if fd >= 0 {
			syscall.Close(fd)
		}
		return nil, nil, 0, errno
	}
	child := n.newChild(ctx, &st, out)
	childNode := child.Operations().(*Node)
	if !g.traced() {
		return child, newExemptWriter(ctx, childNode, fd), openFlags, 0
	}
	t := newTracking(childNode, rel, g, created, pre, kept)
	t.truncated = !created && flags&syscall.O_TRUNC != 0
	return child, newFile(childNode, fd, t), openFlags, 0
}

// checkpointOpenAsDaemon is checkpointOpenLocked in an OPEN or CREATE,
// which run as their caller (CallerScope): hashing the other handles'
// file and keeping its bytes in the store is the daemon's work.
func (n *Node) checkpointOpenAsDaemon(ctx context.Context) {
	if !n.hasTracked() {
		return // the common case: no other handle writes the file
	}
	_ = n.root.asDaemon(ctx, func() error {
		n.checkpointOpenLocked()
		return nil
	})
}

// hasTracked reports whether a tracked (governed, writing) handle is open
// on n. n.writeMu is held, so none is being opened.
func (n *Node) hasTracked() bool {
	n.openMu.Lock()
	defer n.openMu.Unlock()
	for _, f := range n.open {
		if f.track.Load() != nil {
			return true
		}
	}
	return false
}
