package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
)

// maxControlWrite bounds what an agent may write to a control file at
// once; an intent id is a few bytes.
const maxControlWrite = 4096

// Dir is the virtual .intentfs/ directory in the mount root: the agent's
// interface to intentfs, usable from any shell.
//
//	active     read: the active intent id or "none"; write an id (or "none") to select
//	intents    the intents, one line each: id, status, name, scope
//	context    the <intent_context> block of the active intent
//	lesson     write: a lesson learned, appended to .orchestration/CLAUDE.md
//	mutation_class  read/write: the class declared for the agent's next writes (AST_REFACTOR, …) or "none"
//	status     JSON status of the mount
//	denials    recent denials, one line each, newest last
//	check      read-write: write a path, read whether changing it would be allowed
//	pending    what waits for a human (held changes, scope requests) and recent decisions
//	request    write: ask for more scope ("paths: GLOB...\nwhy: REASON")
//	README.md  how to work here, for agents
type Dir struct {
	fs.Inode
	backend Backend
	// describe names the process behind a request, for the ledger.
	describe func(*fuse.Caller) *ledger.Process
	// asDaemon, if set, runs the daemon's own work inside a request that
	// otherwise runs as its caller (an OPEN): a control file's content is
	// the daemon's to read (the ledger, for context), not the caller's.
	asDaemon func(ctx context.Context, fn func() error) error
	// snapshots bounds the handles and snapshot bytes each uid holds.
	snapshots snapshotLimit
	// withoutHandles says the kernel opens the files with no OPEN (the
	// cached data path): reads come with no handle (see handleless.go).
	withoutHandles bool
	// files are the control files by name, as OnAdd made them.
	files map[string]*fs.Inode
	// views are the per-view inodes of the cached data path (views.go).
	views struct {
		sync.Mutex
		nodes map[viewSlot]*fs.Inode
		order []viewSlot
	}
}

// ServeWithoutHandles tells the directory that its files are read with
// no handle (the cached data path); it is called before the mount serves.
func (d *Dir) ServeWithoutHandles() { d.withoutHandles = true }

// RunAsDaemon makes the directory compute its files' content with the
// daemon's credentials, through asDaemon (fsnode.Root.AsDaemon).
func (d *Dir) RunAsDaemon(asDaemon func(ctx context.Context, fn func() error) error) {
	d.asDaemon = asDaemon
}

var (
	_ = (fs.NodeOnAdder)((*Dir)(nil))
	_ = (fs.NodeGetattrer)((*Dir)(nil))
	_ = (fs.NodeReaddirer)((*Dir)(nil))
)

// NewDir returns the control directory node for a backend.
func NewDir(b Backend, describe func(*fuse.Caller) *ledger.Process) *Dir {
	return &Dir{backend: b, describe: describe}
}

// OnAdd populates the directory.
func (d *Dir) OnAdd(ctx context.Context) {
	files := []*ctlFile{
		{name: "active", mode: 0o666, read: d.readActive, write: d.writeActive},
		{name: "intents", mode: 0o444, read: d.readIntents},
		{name: "context", mode: 0o444, read: d.readContext},
		{name: "lesson", mode: 0o222, read: func(*fuse.Caller) []byte { return nil }, write: d.writeLesson},
		{name: "mutation_class", mode: 0o666, read: d.readClass, write: d.writeClass},
		{name: "status", mode: 0o444, read: d.readStatus},
		{name: "denials", mode: 0o444, read: d.readDenials},
		{name: "pending", mode: 0o444, read: d.readPending},
		{name: "request", mode: 0o222, read: func(*fuse.Caller) []byte { return nil }, write: d.writeRequest, partial: partialScopeRequest},
		{name: "README.md", mode: 0o444, read: func(*fuse.Caller) []byte { return []byte(AgentGuide) }},
	}
	d.files = map[string]*fs.Inode{}
	for _, f := range files {
		f.dir = d
		d.files[f.name] = d.NewPersistentInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG})
	}
	d.files["check"] = d.NewPersistentInode(ctx, &checkFile{dir: d}, fs.StableAttr{Mode: syscall.S_IFREG})
	for name, n := range d.files {
		d.AddChild(name, n, false)
	}
}

// Readdir lists the control files after "." and "..", as any directory
// lists them (go-fuse's default listing has only the children).
func (d *Dir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	entries, errno := d.listing()
	if errno != 0 {
		return nil, errno
	}
	return fs.NewListDirStream(entries), 0
}

// listing is the directory's entries, "." and ".." first. A per-view
// file is listed with the number of the inode OnAdd made for it.
func (d *Dir) listing() ([]fuse.DirEntry, syscall.Errno) {
	entries := []fuse.DirEntry{
		{Name: ".", Mode: syscall.S_IFDIR, Ino: d.StableAttr().Ino},
		{Name: "..", Mode: syscall.S_IFDIR},
	}
	for _, name := range slices.Sorted(maps.Keys(d.files)) {
		ch := d.files[name]
		entries = append(entries, fuse.DirEntry{Name: name, Mode: ch.Mode(), Ino: ch.StableAttr().Ino})
	}
	return entries, 0
}

// Getattr reports a read-only directory.
func (d *Dir) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFDIR | 0o555
	out.Nlink = 2
	setTimes(&out.Attr)
	return 0
}

// Changed tells the kernel that the named control files' content has
// changed, so that a stat right after (within the clock tick the kernel
// keeps even a nanosecond's attributes) reads the new size: a denial, and
// a stat of .intentfs/denials by the agent that was just refused. Only a
// file the kernel was answered about since is invalidated, so a flood of
// denials nobody looks at costs nothing here.
func (d *Dir) Changed(names ...string) {
	for _, name := range names {
		child := d.files[name]
		if child == nil {
			continue
		}
		for _, n := range append(d.viewNodes(name), child) {
			if f, ok := n.Operations().(*ctlFile); ok && f.cached.Swap(false) {
				// INVAL_INODE of a control file, which holds a few
				// bytes of page cache at most, takes no lock a pending
				// request holds.
				_ = n.NotifyContent(0, 0)
			}
		}
	}
}

func setTimes(a *fuse.Attr) {
	now := time.Now()
	a.SetTimes(&now, &now, &now)
}

func (d *Dir) readIntents(caller *fuse.Caller) []byte {
	return d.backend.IntentList(d.describe(caller))
}

func (d *Dir) readActive(caller *fuse.Caller) []byte {
	if id := d.backend.Active(d.describe(caller)); id != "" {
		return []byte(id + "\n")
	}
	return []byte("none\n")
}

func (d *Dir) writeActive(data []byte, caller *fuse.Caller) syscall.Errno {
	by := d.describe(caller)
	if len(data) > maxControlWrite {
		d.backend.InvalidControlWrite("active", data[:64], errors.New("write larger than 4 KiB"), by)
		return syscall.EINVAL
	}
	if !utf8.Valid(data) {
		d.backend.InvalidControlWrite("active", data, errors.New("not text"), by)
		return syscall.EINVAL
	}
	id, err := oneValue(data)
	if err != nil {
		d.backend.InvalidControlWrite("active", data, err, by)
		return syscall.EINVAL
	}
	if err := d.backend.Select(id, by); err != nil {
		// Too many selects (EBUSY), an intent another session holds
		// (EBUSY), a pinned session (EPERM): the backend has recorded
		// the refusal.
		for _, errno := range []syscall.Errno{syscall.EBUSY, syscall.EPERM} {
			if errors.Is(err, errno) {
				return errno
			}
		}
		d.backend.InvalidControlWrite("active", data, err, by)
		return syscall.EINVAL
	}
	return 0
}

// oneValue reads what a control file that holds one value accepts: the
// value, optionally followed by one newline ("echo X > file"); "none"
// means no value and comes back as "". Anything else (two lines, an
// empty write, spaces) is refused, so one write(2) is one command.
func oneValue(data []byte) (string, error) {
	v := strings.TrimSuffix(string(data), "\n")
	switch {
	case v == "":
		return "", errors.New(`empty write: write a value, or "none" to clear it`)
	case strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "", errors.New(`write exactly one value (or "none"), optionally followed by one newline`)
	case v == "none":
		return "", nil
	}
	return v, nil
}

func (d *Dir) readContext(caller *fuse.Caller) []byte {
	by := d.describe(caller)
	if d.backend.Active(by) == "" {
		return []byte("no intent is active: write an intent id to .intentfs/active first (see .intentfs/README.md)\n")
	}
	b, err := d.backend.Context("", by)
	if err != nil {
		return []byte("error: " + err.Error() + "\n")
	}
	return b
}

func (d *Dir) writeLesson(data []byte, caller *fuse.Caller) syscall.Errno {
	by := d.describe(caller)
	if err := d.backend.Lesson(string(data), by); err != nil {
		d.backend.InvalidControlWrite("lesson", data, err, by)
		return syscall.EINVAL
	}
	return 0
}

func (d *Dir) readClass(*fuse.Caller) []byte {
	if c := d.backend.DeclaredClass(); c != "" {
		return []byte(string(c) + "\n")
	}
	return []byte("none\n")
}

func (d *Dir) writeClass(data []byte, caller *fuse.Caller) syscall.Errno {
	by := d.describe(caller)
	class, err := oneValue(data)
	if err != nil {
		d.backend.InvalidControlWrite("mutation_class", data, err, by)
		return syscall.EINVAL
	}
	if err := d.backend.DeclareClass(class, by); err != nil {
		d.backend.InvalidControlWrite("mutation_class", data, err, by)
		return syscall.EINVAL
	}
	return 0
}

func (d *Dir) readStatus(caller *fuse.Caller) []byte {
	st := d.backend.Status()
	if id := d.backend.SessionOf(d.describe(caller)); id != "" {
		// Inside a session, the status speaks for the session.
		for _, s := range st.Sessions {
			if s.Live && s.ID == id {
				st.Session = &s
				st.ActiveIntent = s.Intent
				st.IntentName, st.IntentStatus = d.backend.IntentInfo(s.Intent)
				break
			}
		}
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	return append(b, '\n')
}

func (d *Dir) readDenials(caller *fuse.Caller) []byte {
	var b strings.Builder
	for _, dn := range d.backend.Denials(d.describe(caller)) {
		comm := ""
		if dn.Process != nil {
			comm = fmt.Sprintf(" pid=%d comm=%s", dn.Process.Pid, textsafe.Escape(dn.Process.Comm))
		}
		intent := dn.Intent
		if intent == "" {
			intent = "none"
		}
		// One line per denial, whatever the names in it hold.
		esc := textsafe.Escape
		repeats := ""
		if dn.Repeats > 0 {
			repeats = fmt.Sprintf(" (and %d more like it in the same second)", dn.Repeats)
		}
		fmt.Fprintf(&b, "%s %s %s intent=%s code=%s%s: %s%s\n", dn.Time.UTC().Format(time.RFC3339), esc(dn.Op), esc(dn.Path), esc(intent), esc(dn.Code), comm, esc(dn.Reason), repeats)
	}
	return []byte(b.String())
}

// ctlFile is one control file. Its content is taken when it is opened,
// so a reader sees one consistent snapshot.
type ctlFile struct {
	fs.Inode
	// cached says that the kernel may hold the file's attributes: it was
	// answered since the last invalidation (see Dir.Changed).
	cached atomic.Bool
	dir    *Dir
	name   string
	mode   uint32
	read   func(caller *fuse.Caller) []byte
	write  func(data []byte, caller *fuse.Caller) syscall.Errno
	// partial, if set, reports whether what a handle was written so far
	// is the start of a command that more writes will complete: the
	// file then takes one command per open, over several write(2)s
	// (bash's printf writes a line at a time), applied when it is
	// complete and refused at close if it never is.
	partial func(data []byte) bool
	// handleless keeps, per process, the pending command of writes
	// that come without a handle (see handleless.go).
	handleless byProcess[ctlHandle]
	// sized keeps, per process, the content whose size its last GETATTR
	// reported, for its reads without a handle (see handleless.go).
	sized byProcess[ctlSnapshot]
	// view is the view whose content this inode holds, on the cached
	// data path (nil: every caller's, see views.go).
	view *viewKey
}

// ctlSnapshot is the content a handle-less reader was told the size of.
type ctlSnapshot struct {
	mu      sync.Mutex
	content []byte
}

var (
	_ = (fs.NodeGetattrer)((*ctlFile)(nil))
	_ = (fs.NodeSetattrer)((*ctlFile)(nil))
	_ = (fs.NodeOpener)((*ctlFile)(nil))
	_ = (fs.NodeReader)((*ctlFile)(nil))
	_ = (fs.NodeWriter)((*ctlFile)(nil))
	_ = (fs.NodeFlusher)((*ctlFile)(nil))
	_ = (fs.FileReleaser)((*ctlHandle)(nil))
)

func (f *ctlFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if errno := f.dir.refuseOtherViews(ctx, f.view); errno != 0 {
		return errno
	}
	out.Mode = syscall.S_IFREG | f.mode
	out.Nlink = 1
	// The real size, so `test -s` and a listing tell an empty file from a
	// full one: that of the snapshot an open handle reads, else of the
	// content now. Readers still read to EOF (direct I/O), so content that
	// changed after a stat is read whole.
	if h, ok := fh.(*ctlHandle); ok && h.content != nil {
		out.Size = uint64(len(h.content))
	} else {
		caller, _ := fuse.FromContext(ctx)
		content := f.read(caller)
		out.Size = uint64(len(content))
		if f.dir != nil && f.dir.withoutHandles {
			// The kernel will read no further than this size: the
			// caller's reads answer from this content (readHandleless).
			snap := f.sized.get(caller, true)
			snap.mu.Lock()
			snap.content = content
			snap.mu.Unlock()
		}
	}
	// The content changes with every select or denial; let the kernel keep
	// the size for no time (0 would mean the mount's default, a second).
	// The kernel rounds that up to a clock tick, so the daemon also
	// invalidates it when the content changes (Dir.Changed).
	out.SetTimeout(time.Nanosecond)
	f.cached.Store(true)
	setTimes(&out.Attr)
	return 0
}

// Setattr accepts the truncation of `echo id > active` and nothing else.
func (f *ctlFile) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok && sz == 0 && f.write != nil {
		return f.Getattr(ctx, fh, out)
	}
	return syscall.EPERM
}

type ctlHandle struct {
	content []byte
	// release gives the handle's share back (see snapshotLimit); nil if
	// it holds none.
	release func()

	mu sync.Mutex
	// pending is what was written of a command that is not complete
	// yet (see ctlFile.partial).
	pending []byte
	// incomplete refuses pending once the writes pause, where no FLUSH
	// will (see refuseIncompleteLater).
	incomplete pendingTimer
}

// pendingTimer is a timer that may not be set.
type pendingTimer struct{ timer *time.Timer }

// Stop stops the timer, if set.
func (p *pendingTimer) Stop() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}

func (f *ctlFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY && f.write == nil {
		return nil, 0, syscall.EACCES
	}
	caller, _ := fuse.FromContext(ctx)
	// Write-only opens (echo x > lesson) take no snapshot.
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		return f.counted(caller, &ctlHandle{})
	}
	var content []byte
	read := func() error { content = f.read(caller); return nil }
	if f.dir != nil && f.dir.asDaemon != nil {
		if err := f.dir.asDaemon(ctx, read); err != nil {
			return nil, 0, syscall.EIO
		}
	} else {
		_ = read()
	}
	return f.counted(caller, &ctlHandle{content: content})
}

// counted counts h in its caller's share of control handles, or refuses
// it with EMFILE.
func (f *ctlFile) counted(caller *fuse.Caller, h *ctlHandle) (fs.FileHandle, uint32, syscall.Errno) {
	if f.dir != nil {
		var uid uint32
		if caller != nil {
			uid = caller.Uid
		}
		release, errno := f.dir.snapshots.take(uid, len(h.content))
		if errno != 0 {
			return nil, 0, errno
		}
		h.release = release
	}
	return h, fuse.FOPEN_DIRECT_IO, 0
}

// Release gives the handle's share back.
func (h *ctlHandle) Release(ctx context.Context) syscall.Errno {
	if h.release != nil {
		h.release()
	}
	return 0
}

func (f *ctlFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if errno := f.dir.refuseOtherViews(ctx, f.view); errno != 0 {
		return nil, errno
	}
	if fh == nil {
		return f.readHandleless(ctx, dest, off)
	}
	h, ok := fh.(*ctlHandle)
	if !ok {
		return nil, syscall.EBADF
	}
	if off >= int64(len(h.content)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(off+int64(len(dest)), int64(len(h.content)))
	return fuse.ReadResultData(h.content[off:end]), 0
}

// Write applies one command per write(2): `echo INT-001 > active`.
func (f *ctlFile) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if f.write == nil {
		return 0, syscall.EACCES
	}
	if errno := f.dir.refuseOtherViews(ctx, f.view); errno != 0 {
		return 0, errno
	}
	caller, _ := fuse.FromContext(ctx)
	n := uint32(len(data)) // what this write(2) wrote, whatever it completes
	handleless := fh == nil
	if handleless && f.partial != nil {
		fh = f.handleless.get(caller, true)
	}
	if h, ok := fh.(*ctlHandle); ok && f.partial != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.incomplete.Stop()
		if len(h.pending)+len(data) <= maxControlWrite {
			cmd := append(h.pending, data...)
			if f.partial(cmd) {
				h.pending = cmd
				if handleless {
					f.refuseIncompleteLater(h, caller)
				}
				return n, 0
			}
			h.pending = nil
			data = cmd
		} else {
			data = append(h.pending, data...) // too large: refused below, with the reason
			h.pending = nil
		}
	}
	if errno := f.write(data, caller); errno != 0 {
		return 0, errno
	}
	return n, 0
}

// incompleteAfter is how long a command written with no handle may wait
// for the write that completes it (see refuseIncompleteLater).
const incompleteAfter = 500 * time.Millisecond

// refuseIncompleteLater refuses h's pending command, as Flush does at
// close, once the writes of its process have paused for incompleteAfter
// without completing it: with no handle (the cached data path) no FLUSH
// comes at close, and a command left incomplete must still be refused and
// recorded, never left pending. h.mu is held.
func (f *ctlFile) refuseIncompleteLater(h *ctlHandle, caller *fuse.Caller) {
	var by *fuse.Caller
	if caller != nil {
		c := *caller // the request's caller is not the daemon's to keep
		by = &c
	}
	h.incomplete.timer = time.AfterFunc(incompleteAfter, func() {
		h.mu.Lock()
		left := h.pending
		h.pending = nil
		h.mu.Unlock()
		if len(left) > 0 {
			f.write(left, by)
		}
	})
}

// Flush refuses a command left incomplete (see ctlFile.partial): the
// write that would complete it never came, and close(2) says so.
func (f *ctlFile) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	h, ok := fh.(*ctlHandle)
	if !ok || f.partial == nil {
		return 0
	}
	h.mu.Lock()
	left := h.pending
	h.pending = nil
	h.mu.Unlock()
	if len(left) == 0 {
		return 0
	}
	caller, _ := fuse.FromContext(ctx)
	if errno := f.write(left, caller); errno != 0 {
		return errno
	}
	return 0
}

// readHandleless reads the content as it is now (see handleless.go).
func (f *ctlFile) readHandleless(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	caller, _ := fuse.FromContext(ctx)
	if snap := f.sized.get(caller, false); snap != nil {
		snap.mu.Lock()
		content := snap.content
		end := min(off+int64(len(dest)), int64(len(content)))
		if content != nil && end == int64(len(content)) {
			snap.content = nil // read to its end: the next reader sizes anew
		}
		snap.mu.Unlock()
		if content != nil {
			if off >= end {
				return fuse.ReadResultData(nil), 0
			}
			return fuse.ReadResultData(content[off:end]), 0
		}
	}
	var content []byte
	read := func() error { content = f.read(caller); return nil }
	if f.dir != nil && f.dir.asDaemon != nil {
		if err := f.dir.asDaemon(ctx, read); err != nil {
			return nil, syscall.EIO
		}
	} else {
		_ = read()
	}
	if off >= int64(len(content)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(off+int64(len(dest)), int64(len(content)))
	return fuse.ReadResultData(content[off:end]), 0
}
