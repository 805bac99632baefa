package control

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// On the cached data path the kernel reads a control file through its
// page cache, which belongs to the inode, not to the reader: two sessions
// reading .intentfs/active at once could each be handed the bytes the
// daemon computed for the other. So there, the files whose content
// depends on the caller are one inode per view (a session and uid; for
// check, each process too): LOOKUP answers each caller with the inode of
// its own view, and the entry must never be kept by the kernel
// (PerCallerEntry), so that every path walk asks again. A READDIRPLUS
// gives those names no inode for the same reason (dirHandle.Lookup).
// A reader that reaches another view's inode anyway (a descriptor
// inherited across a session's start) is refused its reads: what it
// would read, or leave in the page cache, is not its own.

// perCallerFiles are the control files whose content depends on who
// reads them.
var perCallerFiles = map[string]bool{
	"active": true, "intents": true, "context": true, "status": true, "denials": true, "check": true,
}

// maxViews bounds the per-view inodes kept; past it, the oldest are let
// go (a caller of that view gets a new inode at its next lookup).
const maxViews = 1024

// viewGeneration is the generation of every per-view inode, which the
// kernel is told in each entry: it marks the inode as one whose entry
// must not be kept (PerCallerEntry) for as long as the inode lives,
// whether or not its view is still among the maxViews kept (a lookup
// that found a view may still be answering when the view is let go).
// The workspace's inodes have generation zero.
const viewGeneration = 0x76696577 // "view"

// viewKey names a view: whose content a per-view inode holds.
type viewKey struct {
	session string
	uid     uint32
	// pid is set for check only, whose answers are each process's.
	pid uint32
}

// viewSlot is one file in one view.
type viewSlot struct {
	name string
	key  viewKey
}

// viewOf returns the view caller reads name in.
func (d *Dir) viewOf(name string, caller *fuse.Caller) viewKey {
	var k viewKey
	if caller != nil {
		k.uid = caller.Uid
		if name == "check" {
			k.pid = caller.Pid
		}
	}
	k.session = d.backend.SessionOf(d.describe(caller))
	return k
}

// refuseOtherViews refuses (EACCES) a request on a per-view inode from a
// caller outside its view: a process of another session or uid. For
// check, any process of the view's session and uid passes: a child
// reads through the descriptor its shell opened.
func (d *Dir) refuseOtherViews(ctx context.Context, view *viewKey) syscall.Errno {
	if d == nil || view == nil {
		return 0
	}
	caller, _ := fuse.FromContext(ctx)
	var uid uint32
	if caller != nil {
		uid = caller.Uid
	}
	if uid != view.uid || d.backend.SessionOf(d.describe(caller)) != view.session {
		return syscall.EACCES
	}
	return 0
}

// viewNode returns the inode of name in caller's view, made if needed.
func (d *Dir) viewNode(ctx context.Context, name string, caller *fuse.Caller) *fs.Inode {
	slot := viewSlot{name: name, key: d.viewOf(name, caller)}
	d.views.Lock()
	defer d.views.Unlock()
	if n, ok := d.views.nodes[slot]; ok {
		return n
	}
	var ops fs.InodeEmbedder
	if name == "check" {
		ops = &checkFile{dir: d, view: &slot.key}
	} else {
		orig := d.files[name].Operations().(*ctlFile)
		ops = &ctlFile{dir: d, name: orig.name, mode: orig.mode, read: orig.read, write: orig.write, partial: orig.partial, view: &slot.key}
	}
	n := d.NewInode(ctx, ops, fs.StableAttr{Mode: syscall.S_IFREG, Gen: viewGeneration})
	if d.views.nodes == nil {
		d.views.nodes = map[viewSlot]*fs.Inode{}
	}
	for len(d.views.order) >= maxViews {
		old := d.views.order[0]
		d.views.order = d.views.order[1:]
		delete(d.views.nodes, old)
	}
	d.views.nodes[slot] = n
	d.views.order = append(d.views.order, slot)
	return n
}

// PerCallerEntry reports whether the entry of name, whose inode has
// generation gen, is that of a per-view control file, which the kernel
// must not keep: the mount's raw layer answers its LOOKUPs with an entry
// timeout of zero, which go-fuse's own layer cannot give (it takes zero
// for "the mount's default").
func (d *Dir) PerCallerEntry(name string, gen uint64) bool {
	return perCallerFiles[name] && gen == viewGeneration
}

// viewNodes returns the per-view inodes of name.
func (d *Dir) viewNodes(name string) []*fs.Inode {
	d.views.Lock()
	defer d.views.Unlock()
	var ns []*fs.Inode
	for slot, n := range d.views.nodes {
		if slot.name == name {
			ns = append(ns, n)
		}
	}
	return ns
}

var _ = (fs.NodeOpendirHandler)((*Dir)(nil))

// OpendirHandle lists the directory through a handle whose lookups, for
// a READDIRPLUS, give the per-view names no inode (see dirHandle.Lookup).
func (d *Dir) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	entries, errno := d.listing()
	if errno != 0 {
		return nil, 0, errno
	}
	return &dirHandle{dir: d, entries: entries}, 0, 0
}

// dirHandle is an open listing of the control directory.
type dirHandle struct {
	dir     *Dir
	entries []fuse.DirEntry
	next    int
}

var (
	_ = (fs.FileReaddirenter)((*dirHandle)(nil))
	_ = (fs.FileSeekdirer)((*dirHandle)(nil))
	_ = (fs.FileLookuper)((*dirHandle)(nil))
)

// Readdirent returns the next entry, nil at the end.
func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if h.next >= len(h.entries) {
		return nil, 0
	}
	de := h.entries[h.next]
	h.next++
	de.Off = uint64(h.next)
	return &de, 0
}

// Seekdir goes back to the entry after offset off (an offset Readdirent
// gave).
func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if off > uint64(len(h.entries)) {
		return syscall.EINVAL
	}
	h.next = int(off)
	return 0
}

// Lookup gives an entry of a READDIRPLUS its inode, except a per-view
// file's on the cached data path: its kernel entry would carry go-fuse's
// entry timeout, and a reader of another view could reach this one's
// inode through it. The name is still listed; a lookup of it asks.
func (h *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if h.dir.withoutHandles && perCallerFiles[name] {
		return nil, syscall.EAGAIN
	}
	return h.dir.Lookup(ctx, name, out)
}
