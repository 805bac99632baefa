package fsnode

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/upstreamplan"
)

// Data paths: how reads and writes of existing files reach the source.
const (
	// DataPathPassthrough opens every file with OPEN (where writes are
	// decided and kernel passthrough is set up) and records at RELEASE.
	DataPathPassthrough = "passthrough"
	// DataPathCached answers OPEN and FLUSH with ENOSYS: the kernel then
	// sends no OPEN, FLUSH or RELEASE for existing files, keeps their
	// pages across opens, and the daemon governs the requests that change
	// something instead (see cachedWriter).
	DataPathCached = "cached"
	// DefaultDataPath is what an empty data path means.
	DefaultDataPath = DataPathPassthrough
)

// ParseDataPath checks a --data-path value.
func ParseDataPath(s string) (string, error) {
	switch s {
	case "":
		return DefaultDataPath, nil
	case DataPathPassthrough, DataPathCached:
		return s, nil
	}
	return "", fmt.Errorf("unknown data path %q: use passthrough or cached", s)
}

// cachedWriteQuiet is how long an inode's writes must pause before what
// they wrote is recorded (see cachedWriter). Anything that depends on the
// record settles it first (SettleWrites).
const cachedWriteQuiet = 200 * time.Millisecond

// OpenElider wraps the raw filesystem of a mount on the cached data path.
//
// The first OPEN and the first FLUSH are answered ENOSYS. A kernel that
// offers NO_OPEN_SUPPORT (Linux 3.14+) takes that to mean the filesystem
// keeps no file handles: it sends no OPEN or RELEASE for any file of the
// connection again, opens every file as if the reply had been
// FOPEN_KEEP_CACHE (the page cache survives opens; the source watch and
// the mount's own changes invalidate it), and sends READ and WRITE with
// handle 0. FLUSH answered ENOSYS is not sent again either. Files made by
// CREATE get no RELEASE from then on either (measured on Linux 6.18: three
// creations, no RELEASE), so their handle stays the daemon's, as the
// node's writer (adoptCreated), and their writes come as WRITE requests:
// only a file created before the first OPEN was declined keeps a handle
// of the kernel's, and kernel passthrough.
type OpenElider struct {
	fuse.RawFileSystem
	elide bool // set in Init, before any request is served
	root  *Root
}

var _ fuse.RawFileSystem = (*OpenElider)(nil)

// ElideOpen wraps raw, the filesystem of root's tree.
func ElideOpen(raw fuse.RawFileSystem, root *Root) *OpenElider {
	return &OpenElider{RawFileSystem: raw, root: root}
}

// Init learns from the kernel's INIT whether it can open files without
// OPEN.
func (e *OpenElider) Init(server *fuse.Server) {
	e.elide = server.KernelSettings().Flags64()&fuse.CAP_NO_OPEN_SUPPORT != 0
	e.RawFileSystem.Init(server)
}

// Eliding reports whether the kernel accepted the cached data path; a
// kernel without NO_OPEN_SUPPORT is served on the passthrough path.
func (e *OpenElider) Eliding() bool { return e.elide }

// Open declines, once: the kernel remembers it for the connection.
func (e *OpenElider) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if !e.elide {
		return e.RawFileSystem.Open(cancel, in, out)
	}
	// Set before the kernel reads the answer: a CREATE it sends after
	// that gets no RELEASE, and must find the flag set (adoptCreated).
	e.root.noOpen.Store(true)
	return fuse.ENOSYS
}

// perCallerEntries is a control directory whose files are one inode per
// caller on the cached data path (control.Dir): their entries must be
// looked up at each use.
type perCallerEntries interface {
	PerCallerEntry(name string, gen uint64) bool
}

// Lookup answers a lookup, with an entry timeout of zero for a control
// file that is one inode per caller: kept for even a clock tick, the
// entry would hand the next caller, of another session, this caller's
// inode and its page cache. go-fuse's node layer cannot answer zero (it
// means "the mount's default" there).
func (e *OpenElider) Lookup(cancel <-chan struct{}, header *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	st := e.RawFileSystem.Lookup(cancel, header, name, out)
	if st.Ok() && e.elide {
		if pc, ok := e.root.control.(perCallerEntries); ok && pc.PerCallerEntry(name, out.Generation) {
			out.EntryValid, out.EntryValidNsec = 0, 0
		}
	}
	return st
}

// Flush declines, once: a handle-less file has nothing to flush (writes
// go to the source as they come), and a created file's handle asks for
// no FLUSH (openFlags).
func (e *OpenElider) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	if !e.elide {
		return e.RawFileSystem.Flush(cancel, in)
	}
	return fuse.ENOSYS
}

// cachedWriter is the daemon's writing handle on an inode the kernel
// writes with handle 0 (the cached data path). The first WRITE of a
// process to the inode opens it the way an OPEN for writing does on the
// passthrough path (openFile: decided with the same pipeline, the
// pre-image kept before the first byte changes, the source file opened
// as the caller) and later writes of that process under the same intent
// go through it. Its release, once the inode's writes have paused for
// cachedWriteQuiet or when something depends on the record, records the
// change as the release of a handle does. A write by another process, or
// by the same one under another intent (a select), ends it first and is
// decided anew: a change is always decided under the intent in force when
// it is made.
type cachedWriter struct {
	file   cachedHandle
	pid    uint32
	intent string
	timer  *time.Timer
	// quiet is how long its writes must pause before it is ended.
	quiet time.Duration
	// caller is the process it writes for, for the checks at its end.
	caller fuse.Caller
	// wrote says a write went through it: a truncation after that
	// starts a new version (see truncateThroughWriter).
	wrote bool
	// session says its process is in an agent session, whose reads are
	// remembered for the stale-write check (see notifyChanged).
	session bool
	// sessionID is the agent session its process is in, "" for none: the
	// session's end records it first (SettleSessionWrites).
	sessionID string
	// truncated says it was opened by a truncation (an O_TRUNC open);
	// until it writes, its pause is waited for longer (see
	// settleCachedWriter).
	truncated bool
}

// cachedTruncateQuiet is how long a writer that has truncated the file
// and written nothing yet waits for its writes: an O_TRUNC open and its
// first write are one change, and a record of the emptied file between
// them (a loaded machine can hold the writer past cachedWriteQuiet) would
// be a version no one wrote.
const cachedTruncateQuiet = 2 * time.Second

// cachedHandle is a handle a cachedWriter writes through: a File, or the
// handle of a file git creates from the upstream.
type cachedHandle interface {
	fs.FileWriter
	fs.FileReleaser
	// appendWrite writes at the source file's end (see appendCached).
	appendWrite(ctx context.Context, data []byte) (written uint32, at int64, errno syscall.Errno)
}

// cachedWriters is the set of nodes with a cachedWriter, for SettleWrites.
type cachedWriters struct {
	mu  sync.Mutex
	set map[*Node]struct{}
}

func (c *cachedWriters) add(n *Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set == nil {
		c.set = map[*Node]struct{}{}
	}
	c.set[n] = struct{}{}
}

func (c *cachedWriters) remove(n *Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.set, n)
}

func (c *cachedWriters) nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Node, 0, len(c.set))
	for n := range c.set {
		out = append(out, n)
	}
	return out
}

// SettleWrites records, now, what the cached data path's writers have
// written and not yet recorded: before a select, a status, the commit
// gate, a notes sync or an unmount reads the ledger.
func (r *Root) SettleWrites() { r.settleWritesExcept(nil) }

// SettleSessionWrites records, now, what the writers of the agent session
// id have written and not yet recorded: the session is ending, and its
// end is recorded after what it changed. Other writers keep writing.
func (r *Root) SettleSessionWrites(id string) {
	for _, node := range r.cachedWriters.nodes() {
		node.cachedMu.Lock()
		if cw := node.cw; cw != nil && cw.sessionID == id {
			node.endCachedWriterLocked()
		}
		node.cachedMu.Unlock()
	}
	if r.cached {
		r.checkpointSessionWriters(id)
	}
}

// CheckpointWrites records, now, what the cached data path's writers have
// written, and keeps them writing: for a reader of the ledger (status,
// log, verify, diff, blame), which must see every change made before it
// asked, but must not end a writer still at work. Ended, the writer's next
// write would be opened and decided anew, its half-written file kept
// again as a pre-image, and a file git is still writing from the upstream
// checked and published half written. A writer that has truncated its
// file and written nothing yet is left alone: the emptied file is a
// version no one wrote (see cachedTruncateQuiet). On the passthrough path
// a change is recorded when its handle is released, and nothing waits in
// the daemon.
func (r *Root) CheckpointWrites() {
	if !r.cached {
		return
	}
	own := map[*File]bool{}
	for _, node := range r.cachedWriters.nodes() {
		node.cachedMu.Lock()
		if cw := node.cw; cw != nil {
			if f, ok := cw.file.(*File); ok {
				own[f] = true
				// Under cachedMu: no write through the writer is under
				// way, so the content hashed is one its writes left.
				if cw.wrote || !cw.truncated {
					f.checkpoint(false)
				}
			}
		}
		node.cachedMu.Unlock()
	}
	// Handles the kernel holds (files created before it stopped sending
	// OPEN) are written with their own requests, not through a writer.
	r.checkpointWritersExcept(own)
}

// settleWritesExcept is SettleWrites for every writer but skip's.
func (r *Root) settleWritesExcept(skip *Node) {
	r.endCachedWritersExcept(skip)
	if r.cached {
		// Handles the kernel holds (files created before it stopped
		// sending OPEN) record what they wrote too, should their
		// RELEASE be late or never come.
		r.checkpointWriters()
	}
}

// endCachedWritersExcept records and closes every node's cached writer
// but skip's.
func (r *Root) endCachedWritersExcept(skip *Node) {
	for _, node := range r.cachedWriters.nodes() {
		if node == skip {
			continue
		}
		node.cachedMu.Lock()
		node.endCachedWriterLocked()
		node.cachedMu.Unlock()
	}
}

// endCachedWriterLocked records and closes the node's cached writer, if
// any; n.cachedMu is held.
func (n *Node) endCachedWriterLocked() {
	cw := n.cw
	if cw == nil {
		return
	}
	n.cw = nil
	cw.timer.Stop()
	// Listed until recorded: a settle that finds the node then waits on
	// n.cachedMu for this record (a session's end must not pass a record
	// of the session that its writer's pause began a moment before).
	defer n.root.cachedWriters.remove(n)
	if up, ok := cw.file.(*upstreamFile); ok {
		// A file git creates from the upstream is checked and published
		// at its close (FLUSH), which never comes on this path: here,
		// when git ends, or at a settle (git's renames into .git), as
		// the process that wrote it.
		up.Flush(fuse.NewContext(context.Background(), &cw.caller))
	}
	cw.file.Release(context.Background())
	if cw.session && cw.wrote {
		n.notifyChanged()
	}
}

// cachedTwins returns the nodes other than known whose cached writer
// writes the source inode id: the mount may hold two nodes of one file
// (the kernel forgot the one a CREATE made, whose writer has not ended,
// and looked the name up anew), and a rename or a replacement names only
// the one the directory holds.
func (r *Root) cachedTwins(id fs.StableAttr, known *Node) []*Node {
	var out []*Node
	for _, node := range r.cachedWriters.nodes() {
		st := node.StableAttr()
		if node != known && st.Ino == id.Ino && st.Mode&syscall.S_IFMT == id.Mode&syscall.S_IFMT {
			out = append(out, node)
		}
	}
	return out
}

// checkpointCachedWriter records what the node's cached writer has
// written so far, if it has one; the writer stays open.
func (n *Node) checkpointCachedWriter() {
	n.cachedMu.Lock()
	defer n.cachedMu.Unlock()
	if n.cw != nil {
		n.checkpointOpen()
	}
}

// endCachedWriter records and closes the node's cached writer, if any.
func (n *Node) endCachedWriter() {
	n.cachedMu.Lock()
	defer n.cachedMu.Unlock()
	n.endCachedWriterLocked()
}

// cachedWrite is a WRITE with handle 0: through the node's cachedWriter
// for this process and intent, opened (and decided) on its first write.
func (n *Node) cachedWrite(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f, errno := n.cachedWriterFor(ctx)
	if errno != 0 {
		return 0, errno
	}
	defer n.cachedMu.Unlock()
	var written uint32
	if n.root.appends.has(ctx) {
		written, errno = n.appendCached(ctx, f, data, off)
	} else {
		written, errno = f.Write(ctx, data, off)
	}
	if errno == 0 && n.cw != nil {
		if n.cw.session && !n.cw.wrote {
			n.notifyChanged()
		}
		n.cw.wrote = true
	}
	return written, errno
}

// notifyChanged drops the kernel's pages of n after a session changed it,
// so that another session's next read of it reaches the daemon (Read), and
// is remembered for the stale-write check, instead of being served from
// the page cache where no one sees it. Asynchronous: the kernel may hold
// the inode's locks for the request being answered.
func (n *Node) notifyChanged() {
	go n.NotifyContent(0, 0)
}

// cachedWriterFor returns the writer the request in ctx writes through,
// with n.cachedMu held (the caller unlocks it once its write is done, so
// a settle never closes the descriptor under a write).
func (n *Node) cachedWriterFor(ctx context.Context) (cachedHandle, syscall.Errno) {
	caller, ok := fuse.FromContext(ctx)
	if !ok || caller == nil || caller.Pid == 0 {
		// Writeback of a shared writable mapping comes without the
		// writer's credentials: whose change it is cannot be decided,
		// so it is refused (fail closed). Files made through the mount
		// (CREATE) keep a handle, and with it their mappings.
		rel, _ := n.relPath()
		n.root.log.Warn("a write without caller (shared writable mapping) to a file opened on the cached data path is refused", "path", rel)
		n.dropRefusedPages()
		return nil, syscall.EACCES
	}
	actor := n.root.actorOf(caller)
	intent := actor.Intent
	n.cachedMu.Lock()
	if cw := n.cw; cw != nil {
		if cw.pid == caller.Pid && cw.intent == intent {
			cw.timer.Reset(cw.quiet)
			return cw.file, 0
		}
		n.endCachedWriterLocked()
	}
	var (
		fh    fs.FileHandle
		errno syscall.Errno
	)
	// As an OPEN on the passthrough path: the whole open runs as the
	// caller (see CallerScope), the daemon's part as the daemon.
	if err := n.root.callers.switcher.Run(n.root.callers.of(caller), func() error {
		fh, _, errno = n.Open(ctx, syscall.O_WRONLY)
		return nil
	}); err != nil {
		n.cachedMu.Unlock()
		return nil, syscall.EACCES
	}
	if errno != 0 {
		n.cachedMu.Unlock()
		return nil, errno
	}
	f, ok := fh.(cachedHandle)
	if !ok {
		n.cachedMu.Unlock()
		if r, ok := fh.(fs.FileReleaser); ok {
			r.Release(ctx)
		}
		return nil, syscall.EBADF
	}
	n.installCachedWriterLocked(f, caller, actor)
	n.cw.session = actor.Versions != nil
	return f, 0
}

// dropRefusedPages has the kernel drop the file's cached pages after a
// refused writeback. The kernel marks a page whose writeback failed clean
// and keeps it: without this, every later reader of the mount (a human's
// git commit included) would see the bytes the source refused, as if the
// change had been made.
func (n *Node) dropRefusedPages() {
	n.forgetPagesApart("dropping the pages of a refused writeback from the kernel's cache failed")
}

// forgetPagesApart has the kernel drop the file's cached pages and
// attributes, and logs failed if it cannot. The kernel waits for the
// request in flight, this very one among them, before it drops pages, so
// it runs apart: one goroutine per node at a time, which drops them again
// when asked to meanwhile (a page filled anew after the drop passed it).
func (n *Node) forgetPagesApart(failed string) {
	n.dropAgain.Store(true)
	if !n.dropping.CompareAndSwap(false, true) {
		return
	}
	go func() {
		for {
			n.dropAgain.Store(false)
			if errno := n.EmbeddedInode().NotifyContent(0, 0); errno != 0 && errno != syscall.ENOENT {
				rel, _ := n.relPath()
				n.root.log.Warn(failed, "path", rel, "err", errno)
			}
			n.dropping.Store(false)
			if !n.dropAgain.Load() || !n.dropping.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// installCachedWriterLocked makes f the node's writer for caller, placed
// as actor; n.cachedMu is held.
func (n *Node) installCachedWriterLocked(f cachedHandle, caller *fuse.Caller, actor Actor) {
	cw := &cachedWriter{file: f, pid: caller.Pid, intent: actor.Intent, quiet: n.root.cachedQuiet, caller: *caller}
	if actor.Session != nil {
		cw.sessionID = actor.Session.ID
	}
	_, upstream := f.(*upstreamFile)
	if upstream {
		// Published when git ends (settleAtExit), or at a settle; a
		// pause in its writes is no close. Bounded within the time git
		// may keep such a file (publish refuses it past that).
		cw.quiet = upstreamplan.SinkFor / 2
	}
	cw.timer = time.AfterFunc(cw.quiet, func() { n.settleCachedWriter(cw) })
	n.cw = cw
	n.root.cachedWriters.add(n)
	if upstream {
		n.settleAtExit(cw)
	}
}

// settleAtExit ends cw when its process ends, within the writer's quiet;
// a process that cannot be watched leaves it to the writer's timer.
func (n *Node) settleAtExit(cw *cachedWriter) {
	pidfd, err := unix.PidfdOpen(int(cw.pid), 0)
	if err != nil {
		return
	}
	go func() {
		defer unix.Close(pidfd)
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		for {
			ready, err := unix.Poll(fds, int(cw.quiet/time.Millisecond))
			if err == unix.EINTR {
				continue
			}
			if err == nil && ready > 0 {
				n.settleCachedWriter(cw)
			}
			return
		}
	}()
}

// adoptCreated makes the handle of a file just created by CREATE the
// node's writer, and reports whether it did. Once the kernel has stopped
// sending OPEN (the cached data path, after the first OPEN is declined)
// it sends no RELEASE for any file it opens, created ones included: a
// handle given to the kernel would never be recorded or closed. Before
// that, the handle goes to the kernel as on the passthrough path. The kernel gets none (handle 0); the
// creator's writes go through this writer, and the creation is recorded
// with the content written once they pause, in one record, as a handle's
// release records it on the passthrough path.
func (n *Node) adoptCreated(ctx context.Context, fh fs.FileHandle) bool {
	if !n.root.noOpen.Load() {
		return false
	}
	f, ok := fh.(cachedHandle)
	caller, known := fuse.FromContext(ctx)
	if !ok || !known || caller == nil {
		return false
	}
	actor := n.root.actorOf(caller)
	n.cachedMu.Lock()
	defer n.cachedMu.Unlock()
	n.endCachedWriterLocked()
	n.installCachedWriterLocked(f, caller, actor)
	return true
}

// settleCachedWriter ends cw once its writes have paused, unless it has
// already been ended.
func (n *Node) settleCachedWriter(cw *cachedWriter) {
	n.cachedMu.Lock()
	defer n.cachedMu.Unlock()
	if n.cw != cw {
		return
	}
	if cw.truncated && !cw.wrote && n.root.cachedQuiet < cachedTruncateQuiet {
		cw.truncated = false // once
		cw.timer.Reset(cachedTruncateQuiet - n.root.cachedQuiet)
		return
	}
	n.endCachedWriterLocked()
}

// Read reads through the handle the kernel names, or, for handle 0 (the
// cached data path), through a read-only descriptor the daemon holds on
// the inode: the kernel has checked the caller's access to the file from
// its attributes (default_permissions) when it was opened.
func (n *Node) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if r, ok := f.(fs.FileReader); ok && f != nil {
		return r.Read(ctx, dest, off)
	}
	var m int
	errno := n.withReadFd(func(fd int) error {
		var err error
		if m, err = syscall.Pread(fd, dest, off); err == nil {
			n.sawRead(ctx, fd)
		}
		return err
	})
	if errno != 0 {
		return nil, errno
	}
	return fuse.ReadResultData(dest[:m]), 0
}

// Write writes through the handle the kernel names, or, for handle 0,
// through the node's cachedWriter.
func (n *Node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if w, ok := f.(fs.FileWriter); ok && f != nil {
		return w.Write(ctx, data, off)
	}
	return n.cachedWrite(ctx, data, off)
}

// Fsync syncs through the handle the kernel names, or, for handle 0, the
// node's writer or a read-only descriptor of the inode: fsync(2) of a
// file must not become a silent no-op.
func (n *Node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if s, ok := f.(fs.FileFsyncer); ok && f != nil {
		return s.Fsync(ctx, flags)
	}
	n.cachedMu.Lock()
	if cw := n.cw; cw != nil {
		if s, ok := cw.file.(fs.FileFsyncer); ok {
			defer n.cachedMu.Unlock()
			return s.Fsync(ctx, flags)
		}
	}
	n.cachedMu.Unlock()
	return n.withReadFd(syscall.Fsync)
}

// withReadFd runs fn with a read-only descriptor of n's inode in the
// source: the cached one, opened beneath the root without following
// symlinks on first use; or, while the mount holds its share of cached
// descriptors, one for this call alone. A path that now names another
// inode (replaced behind the mount) answers ESTALE.
func (n *Node) withReadFd(fn func(fd int) error) syscall.Errno {
	n.readMu.RLock()
	if fd := n.readFd; fd > 0 {
		defer n.readMu.RUnlock()
		return fs.ToErrno(fn(fd))
	}
	n.readMu.RUnlock()
	rel, ok := n.relPath()
	if !ok {
		return syscall.ENOENT
	}
	fd, err := withoutNoatimeOnEPERM(syscall.O_RDONLY|syscall.O_NOATIME, func(flags int) (int, error) { return n.root.openBeneath(rel, flags, 0) })
	if err != nil {
		return fs.ToErrno(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return fs.ToErrno(err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || n.root.idFromStat(&st).Ino != n.StableAttr().Ino {
		syscall.Close(fd)
		return syscall.ESTALE
	}
	n.readMu.Lock()
	if n.readFd == 0 && !n.readGone && n.root.dirFds.take() {
		n.readFd = fd
		n.readMu.Unlock()
		n.readMu.RLock()
		defer n.readMu.RUnlock()
		if n.readFd > 0 {
			return fs.ToErrno(fn(n.readFd))
		}
		return syscall.ESTALE // forgotten in the gap: no request names it now
	}
	n.readMu.Unlock()
	defer syscall.Close(fd)
	return fs.ToErrno(fn(fd))
}

// closeReadFd closes the cached read descriptor, when the kernel forgets
// the node.
func (n *Node) closeReadFd() {
	n.readMu.Lock()
	defer n.readMu.Unlock()
	n.readGone = true
	if n.readFd > 0 {
		syscall.Close(n.readFd)
		n.readFd = 0
		n.root.dirFds.give()
	}
}

// fstatHeld stats n's inode through a descriptor the daemon holds on it
// (its read descriptor, or its writer's), and reports whether it could.
func (n *Node) fstatHeld(st *syscall.Stat_t) bool {
	n.readMu.RLock()
	if fd := n.readFd; fd > 0 {
		defer n.readMu.RUnlock()
		return syscall.Fstat(fd, st) == nil
	}
	n.readMu.RUnlock()
	n.cachedMu.Lock()
	defer n.cachedMu.Unlock()
	if cw := n.cw; cw != nil {
		if f, ok := cw.file.(*File); ok {
			return syscall.Fstat(f.fd, st) == nil
		}
	}
	return false
}

// sameInode reports whether st describes n's inode: the same number and
// the same type. The number alone is not enough: a file removed behind
// the mount frees its number for whatever is made next, a symlink at the
// same name included.
func (n *Node) sameInode(st *syscall.Stat_t) bool {
	id := n.root.idFromStat(st)
	return id.Ino == n.StableAttr().Ino && id.Mode&syscall.S_IFMT == n.StableAttr().Mode&syscall.S_IFMT
}

// holdForRemoval is called, on the cached data path, before the name of
// n, a file the kernel knows, is removed (an unlink, a rename over it). A
// process may have it open, and the daemon holds no handle of that open:
// its fstat(2) and reads after the name is gone go through a descriptor
// the daemon takes now (withReadFd), within the mount's share. The
// returned func, called once the name is removed, notes the link the
// pre-image store may have taken of the inode (a pre-image is linked, not
// copied, when no handle is open), which fstat must not report.
func (n *Node) holdForRemoval() (removed func()) {
	if !n.root.cached || n.StableAttr().Mode&syscall.S_IFMT != syscall.S_IFREG {
		return func() {}
	}
	var before syscall.Stat_t
	held := n.withReadFd(func(fd int) error { return syscall.Fstat(fd, &before) }) == 0
	return func() {
		var after syscall.Stat_t
		// Only a file with one link has its pre-image linked
		// (mayLinkPreImage): with its name gone, a link left is the
		// store's.
		if !held || before.Nlink != 1 || !n.fstatHeld(&after) || after.Ino != before.Ino {
			return
		}
		n.storeLinks.Store(uint32(min(after.Nlink, 1)))
	}
}

// visibleNlink is the link count fstat(2) reports for st, an fstat of n's
// inode: without the links the pre-image store holds.
func (n *Node) visibleNlink(st *syscall.Stat_t) {
	if extra := uint64(n.storeLinks.Load()); extra > 0 {
		st.Nlink -= min(st.Nlink, extra)
	}
}

// sawRead tells the reader's session, if any, that it now knows the
// version of n open at fd: on the cached data path no OPEN shows a read,
// only a READ the page cache could not serve (a session's change drops
// the pages, see notifyChanged).
func (n *Node) sawRead(ctx context.Context, fd int) {
	caller, ok := fuse.FromContext(ctx)
	if !ok || caller == nil || caller.Pid == 0 {
		return
	}
	if a := n.root.actorOf(caller); a.Versions != nil {
		if rel, ok := n.relPath(); ok {
			a.sawFd(rel, fd)
		}
	}
}
