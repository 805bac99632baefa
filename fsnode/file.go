package fsnode

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/hanwen/go-fuse/v2/fs"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
)

// File is an open file of the source. Reads and writes go straight to the
// source file, through kernel passthrough where the kernel offers it. A
// handle opened for writing on a governed path is tracked: its content
// hash is taken at open and again when it is released, and a change
// becomes a ledger record.
type File struct {
	*fs.LoopbackFile
	fd int
	// track is the audit state of a handle on a governed path; nil for
	// reads and for writes to exempt paths. It is set once more when a
	// rename brings an exempt handle's file under governance (retrack).
	track atomic.Pointer[tracking]
	// exemptWriter marks a handle opened for writing on an exempt path,
	// and opener is who opened it.
	exemptWriter bool
	opener       fuse.Caller
	node         *Node // the node counting this handle, if any
	// limit, if set, counts this handle in uid's share (handlelimit.go).
	limit *handleLimit
	uid   uint32
	// writing is the inode this handle may write, counted in the root's
	// writeGate while it is open (counted: whether it is).
	writing inodeKey
	counted bool
	// locked says a lock was taken through this handle (see
	// releaseLocks).
	locked atomic.Bool
}

// tracking is the audit state of a handle opened for writing.
type tracking struct {
	node    *Node
	openRel string // path at open, used if the node is gone by release
	g       grant

	mu sync.Mutex
	// created is true until the creation has been recorded.
	created bool
	// base is the digest the next record compares against, and baseKey
	// the stat it was taken at.
	base    objects.Digest
	baseKey objects.Version
	// preImage says what happened to the bytes of base (see keepCopy).
	preImage string
	// mode is the permission bits set through this handle before its
	// creation was recorded ("" if none); the creation record carries it.
	mode string
	// writing is set when the handle is counted among its session's own
	// writers (see agent.Versions.Opened).
	writing bool
	// released is set by the last checkpoint, at release.
	released bool
	// left is set while a rename has taken the file out of the governed
	// tree: what the handle wrote until then was recorded before the move
	// (as the file's removal), what it writes since is not governed.
	// A rename back into the governed tree clears it (see rejoin).
	left atomic.Bool
	// truncated is set when the open truncated the file (O_TRUNC): the
	// file's stat after the open is not the version base was taken of.
	truncated bool
	// seq is the handle's place among the tracked handles opened on node
	// (Node.writeOpens); 0 for a handle tracked since a rename.
	seq uint64
}

// newTracking starts the audit of a handle opened for writing at rel under
// g, and counts it among its session's own writers.
func newTracking(node *Node, rel string, g grant, created bool, base objects.Digest, kept string) *tracking {
	t := &tracking{node: node, openRel: rel, g: g, created: created, base: base, preImage: kept, seq: node.writeOpens.Add(1)}
	if vs := g.actor.Versions; vs != nil {
		vs.Opened(rel)
		t.writing = true
	}
	return t
}

// closeWriting uncounts the handle from its session's writers, which now
// know the version fd holds: they wrote it.
func (t *tracking) closeWriting(fd int) {
	if !t.writing {
		return
	}
	var v *agent.Version
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		cur := agent.VersionOf(&st)
		v = &cur
	}
	rel, ok := t.node.relPath()
	if !ok || rel != t.openRel {
		t.g.actor.Versions.Closed(t.openRel, nil)
		if ok && v != nil {
			t.g.actor.Versions.Saw(rel, *v)
		}
		return
	}
	t.g.actor.Versions.Closed(rel, v)
}

func newFile(node *Node, fd int, t *tracking) *File {
	f := &File{LoopbackFile: fs.NewLoopbackFileFromOS(os.NewFile(uintptr(fd), "")), fd: fd, node: node}
	if node != nil {
		node.handles.Add(1)
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&syscall.O_ACCMODE != syscall.O_RDONLY {
			f.writing, f.counted = node.root.writeGate.opened(fd)
		}
	}
	if t != nil {
		f.track.Store(t)
		var st syscall.Stat_t
		// After an O_TRUNC the stat is of the emptied file, not of base:
		// with no key, the first checkpoint hashes, and records the
		// truncate even if nothing was written.
		if !t.truncated && syscall.Fstat(fd, &st) == nil {
			t.baseKey = objects.VersionOf(&st)
		}
		t.node.addOpen(f)
	}
	return f
}

// newExemptWriter is newFile for a handle opened for writing on an exempt
// path (.intentignore'd, git's state). Its writes are not recorded, but
// the node keeps it, so that a rename bringing the file under governance
// starts tracking it (see retrack).
func newExemptWriter(ctx context.Context, node *Node, fd int) *File {
	f := newFile(node, fd, nil)
	f.exemptWriter = true
	if c, ok := fuse.FromContext(ctx); ok && c != nil {
		f.opener = *c
	}
	node.addOpen(f)
	return f
}

// Release records what the handle changed, then closes it. RELEASE comes
// after close(2) has returned to the caller, so hashing here costs the
// caller nothing.
func (f *File) Release(ctx context.Context) syscall.Errno {
	if t := f.track.Load(); t != nil {
		f.checkpoint(true)
		t.closeWriting(f.fd)
		t.node.removeOpen(f)
	} else if f.exemptWriter {
		f.node.removeOpen(f)
	}
	if f.node != nil {
		f.node.handles.Add(-1)
		if f.counted {
			f.node.root.writeGate.closed(f.writing)
		}
	}
	if f.limit != nil {
		f.limit.give(f.uid)
	}
	f.releaseLocks()
	return f.LoopbackFile.Release(ctx)
}

// checkpoint records the content change since the last checkpoint, if
// any. It runs at release (final), and before a rename, link or unlink of
// the node, so the ledger shows a file's content before it shows it moved.
func (f *File) checkpoint(final bool) {
	t := f.track.Load()
	if t == nil {
		return // an exempt writer: nothing to record
	}
	t.node.writeMu.Lock()
	defer t.node.writeMu.Unlock()
	f.checkpointLocked(t, final)
}

// checkpointLocked is checkpoint with t.node.writeMu held.
func (f *File) checkpointLocked(t *tracking, final bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.released {
		// Release checkpointed it for the last time and closes f.fd: a
		// rename or unlink that found the handle open just before must
		// not use the descriptor, whose number another file may have by
		// now (it hashed that file and recorded it as this one).
		return
	}
	if final {
		defer func() { t.released = true }()
	}
	if t.left.Load() {
		return // outside the governed tree: nothing to record
	}
	if final && !t.created && t.node.openedAfter(t) {
		// RELEASE comes after close(2) has returned, so another open may
		// already have truncated and be rewriting the file: its content
		// now is that handle's, not this one's. What this handle had
		// written when that open came was recorded then (openFile,
		// createFile); anything since is in the file that handle records
		// at its own release, against the version recorded last.
		return
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		t.recordUnexamined(err)
		return
	}
	k := objects.VersionOf(&st)
	if !t.created && k == t.baseKey {
		return // nothing written since the last record
	}
	if !t.named(&st) {
		// The file was unlinked or renamed over, and no link of it is
		// left: what was written since is in no file, and the name it
		// had is another file's now, or none's. Recorded under that
		// name, it would describe a file with content it does not hold.
		t.baseKey = k
		return
	}
	rel, ev, pre := t.recordTarget()
	cc, err := f.analyze(rel, pre)
	d := cc.digest
	reason := ""
	if err != nil {
		// Record the change without its hash rather than lose it.
		t.node.root.log.Error("content hash failed", "path", t.openRel, "err", err)
		reason = "content hash failed: " + err.Error()
		d = objects.Digest{}
	}
	t.baseKey = k
	if !t.created && d.Hash == t.base.Hash {
		return // rewritten with the same bytes
	}
	t.node.root.record(t.g, ledger.Change{Event: ev, Path: rel, PreHash: pre, PostHash: d.Hash, Lines: d.Lines, Op: "release", Reason: reason,
		PreImage: t.preImage, Ranges: cc.ranges, Class: cc.class, Attribute: cc.attribute, Mode: t.mode, Time: time.Now()})
	t.mode = "" // set only while the creation is pending (absorb)
	t.created = false
	t.base = d
	t.preImage = ""
	// The version just recorded is the file itself. A later open keeps it
	// before changing it; but this handle, if it stays open, and the
	// other handles open on the file may change it again with no open in
	// between, so keep it now for them.
	others := t.node.otherTracked(t)
	if !final || len(others) > 0 {
		kept := ""
		if rfd, err := reopenReadOnly(f.fd); err == nil {
			kept = t.node.root.keepCopy(rfd, d)
			syscall.Close(rfd)
		}
		if !final {
			t.preImage = kept
		}
		// The others' next record follows on from this one, not from
		// the version they last saw: the ledger's records of a file
		// form one sequence, whichever handle wrote.
		for _, o := range others {
			o.followRecord(d, k, kept)
		}
	}
}

// named reports whether the file t's handle writes (st, its fstat) still
// has a name: its node's in the tree, or any (a link the mount does not
// know of, which the name it was opened under then stands for). A file
// with no link left is in no tree.
func (t *tracking) named(st *syscall.Stat_t) bool {
	if _, ok := t.node.relPath(); ok {
		return true
	}
	return st.Nlink > 0
}

// recordTarget is the path, event and pre-image hash of t's next record.
func (t *tracking) recordTarget() (rel string, ev ledger.Event, pre string) {
	rel, ok := t.node.relPath()
	if !ok {
		rel = t.openRel
	}
	if t.created {
		return rel, ledger.EventCreate, ""
	}
	return rel, ledger.EventWrite, t.base.Hash
}

// recordUnexamined fails closed when a written file cannot be examined at
// a checkpoint: whether the handle changed it is unknown, so the change it
// may have made is logged and recorded without a hash rather than lost.
// t.mu is held.
func (t *tracking) recordUnexamined(err error) {
	rel, ev, pre := t.recordTarget()
	t.node.root.log.Error("examining a written file failed", "path", rel, "err", err)
	t.node.root.record(t.g, ledger.Change{Event: ev, Path: rel, PreHash: pre, Op: "release", PreImage: t.preImage, Mode: t.mode, Time: time.Now(),
		Reason: "the file could not be examined at this checkpoint (fstat: " + err.Error() + "): what the handle wrote is not known"})
	t.mode, t.created, t.base, t.preImage = "", false, objects.Digest{}, ""
}

// followRecord moves the baseline of a handle open on a file to version
// d at stat key k, just recorded through another handle.
func (t *tracking) followRecord(d objects.Digest, k objects.Version, kept string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.released || t.created {
		return
	}
	t.base, t.baseKey, t.preImage = d, k, kept
}

// otherTracked lists the trackings of the handles open on n other than t;
// a released one stays listed until Release removes it.
func (n *Node) otherTracked(t *tracking) []*tracking {
	n.openMu.Lock()
	defer n.openMu.Unlock()
	var out []*tracking
	for _, f := range n.open {
		if o := f.track.Load(); o != nil && o != t {
			out = append(out, o)
		}
	}
	return out
}

// openedAfter reports whether a tracked handle opened on n after t is
// still open. n.writeMu is held, so none is being opened.
func (n *Node) openedAfter(t *tracking) bool {
	for _, o := range n.otherTracked(t) {
		// o.released is written with n.writeMu held.
		if o.seq > t.seq && !o.released {
			return true
		}
	}
	return false
}

// absorb folds a chmod, chown or utimes of the file, made by the process
// that created it through this handle and under the same intent, into the
// creation record still to be written, and reports whether it did.
// Archivers set a new file's times, owner and mode through its descriptor
// before closing it (tar: futimens, fchown, fchmod; the kernel sends these
// without the handle); one record saying what was created, with which
// mode, replaces four.
func (t *tracking) absorb(g grant, mode string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.released {
		return false // its creation is recorded: the change gets its own record
	}
	if !t.created || g.intent != t.g.intent || g.proc == nil || t.g.proc == nil || g.proc.Pid != t.g.proc.Pid {
		return false
	}
	if mode != "" {
		t.mode = mode
	}
	return true
}

// folds reports whether a change under g made through this handle is
// part of the handle's own change, recorded at its release: the same
// process under the same intent and decision, before the release.
func (t *tracking) folds(g grant) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.released && g.proc != nil && t.g.proc != nil && g.proc.Pid == t.g.proc.Pid && g.intent == t.g.intent &&
		g.decision.Code == t.g.decision.Code && g.decision.Validation == t.g.decision.Validation && t.g.stale == ""
}

// absorbIntoCreation offers a metadata change to the tracked handles open
// on n (see tracking.absorb). A tracking's lock is never taken with
// n.openMu held: a checkpoint holds its tracking's lock while it lists
// the other handles open on n (otherTracked), and the opposite order
// deadlocked a release against a chmod of the same file.
func (n *Node) absorbIntoCreation(g grant, mode string) bool {
	n.openMu.Lock()
	open := slices.Clone(n.open)
	n.openMu.Unlock()
	for _, f := range open {
		if t := f.track.Load(); t != nil && t.absorb(g, mode) {
			return true
		}
	}
	return false
}

// followOpen moves the baseline of the tracked handles open on n to
// version d, recorded elsewhere (a truncate), with n.writeMu held.
func (n *Node) followOpen(d objects.Digest) {
	n.openMu.Lock()
	open := append([]*File(nil), n.open...)
	n.openMu.Unlock()
	kept := ""
	for _, f := range open {
		t := f.track.Load()
		if t == nil {
			continue
		}
		// The handles may change the file again with no open in between
		// to keep the version they start from: keep it now, once.
		if kept == "" {
			t.mu.Lock()
			if !t.released {
				if rfd, err := reopenReadOnly(f.fd); err == nil {
					kept = n.root.keepCopy(rfd, d)
					syscall.Close(rfd)
				}
			}
			t.mu.Unlock()
		}
		t.follow(f.fd, d, kept)
	}
}

// follow is followOpen for one handle, open at fd: kept says whether the
// bytes of d are in the store.
func (t *tracking) follow(fd int, d objects.Digest, kept string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Not once released: Release closes fd after its last checkpoint, and
	// the number may be another file's by now.
	if t.released {
		return
	}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) == nil {
		t.baseKey = objects.VersionOf(&st)
	}
	t.base, t.created, t.preImage = d, false, kept
}

// analyze hashes and describes the handle's file through a read-only
// descriptor of its own, so write-only handles can be hashed too.
func (f *File) analyze(rel, pre string) (contentChange, error) {
	rfd, err := reopenReadOnly(f.fd)
	if err != nil {
		return contentChange{}, err
	}
	defer syscall.Close(rfd)
	return f.track.Load().node.root.analyze(rel, pre, rfd)
}

// addOpen and removeOpen keep the node's list of handles open for
// writing: tracked ones, which rename, link and unlink checkpoint first,
// and exempt ones, which a rename into a governed path starts tracking.
func (n *Node) addOpen(f *File) {
	n.openMu.Lock()
	n.open = append(n.open, f)
	n.openMu.Unlock()
	n.root.writers.add(f)
}

func (n *Node) removeOpen(f *File) {
	n.root.writers.remove(f)
	n.openMu.Lock()
	defer n.openMu.Unlock()
	for i, o := range n.open {
		if o == f {
			n.open = append(n.open[:i], n.open[i+1:]...)
			return
		}
	}
}

// checkpointOpen records pending content changes of every tracked handle
// open on n.
func (n *Node) checkpointOpen() {
	n.writeMu.Lock()
	defer n.writeMu.Unlock()
	n.checkpointOpenLocked()
}

// checkpointOpenLocked is checkpointOpen with n.writeMu held.
func (n *Node) checkpointOpenLocked() {
	n.openMu.Lock()
	open := append([]*File(nil), n.open...)
	n.openMu.Unlock()
	for _, f := range open {
		if t := f.track.Load(); t != nil {
			f.checkpointLocked(t, false)
		}
	}
}

// Flush does what close(2) of the caller's descriptor would do on the
// source: it closes a duplicate of the handle's descriptor. The
// duplicate is close-on-exec: one a process the daemon starts
// meanwhile inherited (git, for the gate and the notes) would keep the
// open file, and any flock taken on it through the mount, for that
// process's whole life.
func (f *File) Flush(ctx context.Context) syscall.Errno {
	return f.flushFd(ctx)
}

func (f *File) flushFd(context.Context) syscall.Errno {
	dup, err := unix.FcntlInt(uintptr(f.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	return fs.ToErrno(syscall.Close(dup))
}
