package fsnode

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Node is a file, directory or symlink of the source directory, seen
// through the mount.
type Node struct {
	fs.Inode
	root *Root

	openMu sync.Mutex
	open   []*File // tracked handles open on this node
	// writeMu orders what the ledger says of this file's content: a
	// tracked handle's checkpoint, and an open for writing, which records
	// the handles already open before its O_TRUNC can empty the file and
	// registers itself before any of them is recorded again (see
	// File.checkpoint). Taken before a tracking's mu.
	writeMu sync.Mutex
	// writeOpens numbers the tracked handles opened on this node, so a
	// handle's release can tell the ones opened after it.
	writeOpens atomic.Uint64
	// handles counts every handle open on this node through the mount.
	handles atomic.Int32

	// dir caches an O_PATH handle on this directory for *at calls, so an
	// operation does not resolve the path from the root each time. It is
	// opened lazily and closed when the kernel forgets the node; the read
	// lock is held while it is in use.
	dirMu sync.RWMutex
	dirFd int // 0: not open
	// forgotten is set once the kernel has forgotten the node: a request
	// still in flight then uses a descriptor of its own, so none is cached
	// where no forget will close it.
	forgotten bool
	// sink is the handle of a file git is creating here from the
	// upstream, until it is published (see upstreamFile): the path has
	// no file yet, so its attributes are the handle's.
	sink atomic.Pointer[upstreamFile]

	// readFd is the daemon's read-only descriptor of the file, for reads
	// on the cached data path (see withReadFd); 0: not open. readGone is
	// set once the kernel has forgotten the node.
	readMu   sync.RWMutex
	readFd   int
	readGone bool
	// storeLinks is how many links of the inode its removal left in the
	// pre-image store (see holdForRemoval): fstat(2) of an open file
	// whose name is gone must not count them.
	storeLinks atomic.Uint32
	// cw is the writer of the cached data path (see cachedWriter).
	cachedMu sync.Mutex
	cw       *cachedWriter
	// dropping is set while the file's pages are being dropped from the
	// kernel's cache, dropAgain when they are to be dropped again since
	// that drop began (see forgetPagesApart).
	dropping, dropAgain atomic.Bool
}

// OnForget records what the node's cached writer wrote and closes the
// cached handles.
func (n *Node) OnForget() {
	// The kernel no longer knows the node, and may know the file under
	// another node already (a listing looked it up anew while the
	// creator still wrote): a rename of it moves that one. Recorded now,
	// under the name it was written under, the writes come before that
	// rename, never after it under a name the file no longer has.
	n.endCachedWriter()
	n.closeReadFd()
	n.dirMu.Lock()
	defer n.dirMu.Unlock()
	n.forgotten = true
	if n.dirFd > 0 {
		syscall.Close(n.dirFd)
		n.dirFd = 0
		n.root.dirFds.give()
	}
}

// relPath returns the node's path relative to the source root ("" for the
// root), or false when the node has been unlinked from the tree.
func (n *Node) relPath() (string, bool) {
	var segs []string
	p := n.EmbeddedInode()
	root := n.Root()
	for p != root {
		name, parent := p.Parent()
		if parent == nil {
			return "", false
		}
		segs = append(segs, name)
		p = parent
	}
	slices.Reverse(segs)
	return strings.Join(segs, "/"), true
}

// childPath returns the path of name inside directory n.
func (n *Node) childPath(name string) (string, bool) {
	dir, ok := n.relPath()
	return joinRel(dir, name), ok
}

// withDir runs fn with an O_PATH handle on directory n: the cached one,
// opened (without following symlinks) on first use. When the mount holds
// its share of cached descriptors (see dircache.go), or the node is being
// forgotten, the handle is opened for this call and closed after it.
func (n *Node) withDir(fn func(dirfd int) error) syscall.Errno {
	if n.IsRoot() {
		return fs.ToErrno(fn(n.root.rootFd))
	}
	rel, ok := n.relPath()
	if !ok {
		return syscall.ENOENT
	}
	n.dirMu.RLock()
	if fd := n.dirFd; fd > 0 {
		defer n.dirMu.RUnlock()
		return fs.ToErrno(fn(fd))
	}
	n.dirMu.RUnlock()
	dirfd, err := n.root.openDir(rel)
	if err != nil {
		return fs.ToErrno(err)
	}
	n.dirMu.Lock()
	if n.dirFd == 0 && !n.forgotten && n.root.dirFds.take() {
		n.dirFd = dirfd
		// Downgrade: fn runs under the read lock, as with a cached
		// handle, so a forget waits for it before closing.
		n.dirMu.Unlock()
		n.dirMu.RLock()
		defer n.dirMu.RUnlock()
		if n.dirFd > 0 {
			return fs.ToErrno(fn(n.dirFd))
		}
		// Forgotten in the gap: the handle is closed; open one again.
		dirfd, err = n.root.openDir(rel)
		if err != nil {
			return fs.ToErrno(err)
		}
	} else {
		// Another request cached one meanwhile, the cache is full, or
		// the node is gone: this call's handle is its own.
		n.dirMu.Unlock()
	}
	defer syscall.Close(dirfd)
	return fs.ToErrno(fn(dirfd))
}

// withDirs runs fn with handles on directories a and b, locking a shared
// directory once: a second read lock on the same node would deadlock
// against a forget waiting for the first.
func withDirs(a, b *Node, fn func(afd, bfd int) error) syscall.Errno {
	if a == b {
		return a.withDir(func(fd int) error { return fn(fd, fd) })
	}
	return a.withDir(func(afd int) error {
		return errnoAsError(b.withDir(func(bfd int) error { return fn(afd, bfd) }))
	})
}

// errnoAsError turns a zero errno into a nil error, so nested *at helpers can
// pass results through an error-returning callback.
func errnoAsError(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// withParent runs fn with an O_PATH handle on n's parent directory and n's
// name in it; for the root, the root handle and "".
func (n *Node) withParent(fn func(dirfd int, name string) error) syscall.Errno {
	rel, ok := n.relPath()
	if !ok {
		return syscall.ENOENT
	}
	if rel == "" {
		return fs.ToErrno(fn(n.root.rootFd, ""))
	}
	if name, parent := n.Parent(); parent != nil {
		if p, ok := parent.Operations().(*Node); ok {
			return p.withChild(name, fn)
		}
	}
	dir, name := splitRel(rel)
	if n.root.mixed(dir) {
		return n.root.withRouted(rel, fn)
	}
	if dir == "" {
		return fs.ToErrno(fn(n.root.rootFd, name))
	}
	dirfd, err := n.root.openDir(dir)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer syscall.Close(dirfd)
	return fs.ToErrno(fn(dirfd, name))
}

// newChild makes the inode for a source entry that was found or created.
func (n *Node) newChild(ctx context.Context, st *syscall.Stat_t, out *fuse.EntryOut) *fs.Inode {
	out.Attr.FromStat(st)
	return n.NewInode(ctx, &Node{root: n.root}, n.root.idFromStat(st))
}

// isControlName reports whether name in n is the control directory.
func (n *Node) isControlName(name string) bool {
	return name == ControlDirName && n.IsRoot() && n.root.control != nil
}

// Lookup finds name in the source directory, without following symlinks.
func (n *Node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.isControlName(name) {
		ctl := n.root.controlInode.Load()
		if ctl == nil {
			return nil, syscall.ENOENT
		}
		if ga, ok := ctl.Operations().(fs.NodeGetattrer); ok {
			var a fuse.AttrOut
			ga.Getattr(ctx, nil, &a)
			out.Attr = a.Attr
		}
		return ctl, 0
	}
	var st syscall.Stat_t
	errno := n.withChild(name, func(dirfd int, name string) error {
		return n.asCallerIn(ctx, func() error { return fstatat(dirfd, name, &st) })
	})
	if errno != 0 {
		return nil, errno
	}
	if n.root.gitView != nil {
		if rel, ok := n.childPath(name); !ok || n.root.shownTwice(rel, &st) {
			return nil, syscall.ENOENT
		}
	}
	return n.newChild(ctx, &st, out), 0
}

// Getattr reports the source entry's attributes.
func (n *Node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if fga, ok := f.(fs.FileGetattrer); ok && f != nil {
		return fga.Getattr(ctx, out)
	}
	var st syscall.Stat_t
	if s := n.sink.Load(); s != nil {
		if err := syscall.Fstat(s.fd, &st); err != nil {
			return fs.ToErrno(err)
		}
		out.FromStat(&st)
		return 0
	}
	errno := n.withParent(func(dirfd int, name string) error {
		return n.asCallerOn(ctx, func() error { return fstatat(dirfd, name, &st) })
	})
	if n.root.cached && !n.IsRoot() && (errno != 0 || !n.sameInode(&st)) {
		// The name holds another file now, or none (a rename or unlink
		// raced this call, or the file is open and gone). On the cached
		// data path no OPEN checks the caller at the source: the
		// kernel's check of these attributes is the only one, so they
		// must never be another file's. A descriptor the daemon holds
		// on the inode still tells its own.
		if n.fstatHeld(&st) {
			n.visibleNlink(&st)
			out.FromStat(&st)
			return 0
		}
		if errno == 0 {
			errno = syscall.ESTALE
		}
	}
	if errno != 0 {
		return errno
	}
	out.FromStat(&st)
	if n.IsRoot() {
		out.SetTimeout(rootAttrTimeout)
	}
	return 0
}

// Readlink returns a symlink's target. The daemon never follows it; the
// kernel resolves it in the caller's context.
func (n *Node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	var target []byte
	errno := n.withParent(func(dirfd int, name string) error {
		return n.asCallerOn(ctx, func() error { return readlinkat(dirfd, name, &target) })
	})
	return target, errno
}

// readlinkat reads the target of symlink name in dirfd, whatever its
// length.
func readlinkat(dirfd int, name string, target *[]byte) error {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		m, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return err
		}
		if m < size {
			*target = buf[:m]
			return nil
		}
	}
}

// Statfs reports the source filesystem's figures.
func (n *Node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var s syscall.Statfs_t
	if err := syscall.Fstatfs(n.root.rootFd, &s); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStatfsT(&s)
	return 0
}

// OpendirHandle lists the source directory. The control directory is not
// listed, so find, tar and git status never see it.
func (n *Node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	rel, ok := n.relPath()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	if rel != "" && n.root.mixed(rel) {
		ds, errno := n.root.openMixedDir(ctx, rel)
		return ds, 0, errno
	}
	var fd int
	err := n.root.asCaller(ctx, func() (err error) {
		fd, err = n.root.openBeneath(rel, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		return err
	})
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	ds, errno := fs.NewLoopbackDirStreamFd(fd)
	if errno != 0 {
		syscall.Close(fd)
		return nil, 0, errno
	}
	// The kernel may keep the listing: a change through the mount drops it,
	// and one made in the source behind the mount shows when the
	// directory's attributes are next refreshed (its mtime moved).
	return ds, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}
