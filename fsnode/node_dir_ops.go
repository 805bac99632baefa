package fsnode

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// makeEntry is the shared shape of mkdir, mknod and symlink: decide,
// create with mk in the directory as the caller (so the entry is the
// caller's, with the group a set-group-ID directory gives), stat it,
// record.
func (n *Node) makeEntry(ctx context.Context, op policy.Op, ev ledger.Event, name string, isDir bool,
	mk func(dirfd int) error, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.makeEntryHashed(ctx, op, ev, name, isDir, "", mk, out)
}

// makeEntryHashed is makeEntry recording postHash as what was made.
func (n *Node) makeEntryHashed(ctx context.Context, op policy.Op, ev ledger.Event, name string, isDir bool, postHash string,
	mk func(dirfd int) error, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.isViewTop(name) {
		return nil, syscall.EEXIST
	}
	rel, g, errno := n.authorizeChild(ctx, name, syscall.EEXIST, policy.Request{Op: op, IsDir: isDir})
	if errno != 0 {
		return nil, errno
	}
	var st syscall.Stat_t
	errno = n.withChild(name, func(dirfd int, name string) error {
		if err := n.asCallerIn(ctx, func() error { return mk(dirfd) }); err != nil {
			return err
		}
		if g.upstream != nil && isDir {
			// A directory of the upstream's, made outside the scope:
			// git's usual mode whatever the caller asked (no sticky or
			// set-ID bit, nothing writable by others).
			if err := fstatat(dirfd, name, &st); err != nil {
				return err
			}
			if err := n.root.asCaller(ctx, func() error { return chmodAt(dirfd, name, st.Mode&0o755, !n.root.noFchmodat2.Load()) }); err != nil {
				return err
			}
		}
		return fstatat(dirfd, name, &st)
	})
	if errno != 0 {
		return nil, errno
	}
	n.root.record(g, ledger.Change{Event: ev, Path: rel, Op: string(ev), PostHash: postHash})
	return n.newChild(ctx, &st, out), 0
}

// Mkdir creates a directory.
func (n *Node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.makeEntry(ctx, policy.OpMkdir, ledger.EventMkdir, name, true,
		func(dirfd int) error { return unix.Mkdirat(dirfd, name, mode) }, out)
}

// Mknod creates a device node, FIFO or socket. The kernel has already
// checked that the caller may (CAP_MKNOD for devices).
func (n *Node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.makeEntry(ctx, policy.OpMknod, ledger.EventMknod, name, false,
		func(dirfd int) error { return unix.Mknodat(dirfd, name, mode, int(rdev)) }, out)
}

// Symlink creates a symlink. Its target is stored, never resolved by the
// daemon.
//
// Its record carries the sha256 of the target, which is what git commits
// as the link's blob: check compares them as it does a file's content.
func (n *Node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.makeEntryHashed(ctx, policy.OpSymlink, ledger.EventSymlink, name, false, ledger.HashBytes([]byte(target)),
		func(dirfd int) error { return unix.Symlinkat(target, dirfd, name) }, out)
}

// Link creates a hard link. The existing file must be in scope as well as
// the new name, or a link would let a write reach it.
func (n *Node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	src, ok := target.(*Node)
	if !ok || src.root != n.root || n.isControlName(name) {
		return nil, syscall.EXDEV
	}
	srcRel, ok := src.relPath()
	if !ok {
		return nil, syscall.ENOENT
	}
	rel, g, errno := n.authorizeChild(ctx, name, syscall.EXDEV, policy.Request{Op: policy.OpLink, Path2: srcRel})
	if errno != 0 {
		return nil, errno
	}
	src.checkpointOpen()
	srcName, srcParent := src.Parent()
	if srcParent == nil {
		return nil, syscall.ENOENT
	}
	sp, ok := srcParent.Operations().(*Node)
	if !ok {
		return nil, syscall.EXDEV
	}
	var st syscall.Stat_t
	errno = withChildren(sp, srcName, n, name, func(srcDir int, srcName string, dirfd int, name string) error {
		if err := n.asCallerIn(ctx, func() error { return unix.Linkat(srcDir, srcName, dirfd, name, 0) }, sp); err != nil {
			return err
		}
		return fstatat(dirfd, name, &st)
	})
	if errno != 0 {
		return nil, errno
	}
	n.root.record(g, ledger.Change{Event: ledger.EventLink, Path: rel, FromPath: srcRel, Op: "link"})
	return n.newChild(ctx, &st, out), 0
}

// Unlink removes a file; its last content hash is recorded as pre_hash.
func (n *Node) Unlink(ctx context.Context, name string) syscall.Errno {
	rel, g, errno := n.authorizeChild(ctx, name, syscall.EACCES, policy.Request{Op: policy.OpUnlink})
	if errno != 0 {
		return errno
	}
	n.checkpointChild(name)
	var pre objects.Digest
	var kept string
	var finish func(*ledger.Record)
	if g.upstream != nil && g.upstream.Rewrite {
		return n.unlinkForUpstream(ctx, name, rel, g)
	}
	removedName := func() {}
	if child := n.childNode(name); child != nil {
		removedName = child.holdForRemoval()
	}
	mode := ""
	var st syscall.Stat_t
	var lostErr error
	errno = n.withChild(name, func(dirfd int, name string) error {
		if g.provisional {
			// The provisional file leaves the table once it is gone;
			// that it is the same file was checked when it was decided.
			if err := fstatat(dirfd, name, &st); err != nil {
				return err
			}
			if !n.root.prov.holdsStat(rel, &st) {
				return syscall.EACCES
			}
		}
		if g.traced() {
			// The mode goes into the record, so that a revert recreates
			// the file as private as it was.
			var fst syscall.Stat_t
			if fstatat(dirfd, name, &fst) == nil && fst.Mode&syscall.S_IFMT == syscall.S_IFREG {
				mode = fmt.Sprintf("%04o", fst.Mode&0o7777)
			}
			// A pre-image linked into the store stays out of reach of
			// writable opens until the unlink is done.
			var done func()
			mayLink := noHandles(n.childNode(name))
			if finish, done = n.root.deferredRemoval(dirfd, name, mayLink); finish == nil {
				done()
				if pre, kept, done, lostErr = n.root.preImageForRemoval(dirfd, name, callerUID(ctx), mayLink); lostErr != nil {
					done()
					return syscall.ENOSPC // the cause is lostErr, answered below
				}
			}
			defer done()
		}
		return n.asCallerIn(ctx, func() error { return unix.Unlinkat(dirfd, name, 0) })
	})
	if lostErr != nil {
		return n.root.failChange(ctx, policy.Request{Op: policy.OpUnlink, Path: rel}, lostErr)
	}
	if errno == syscall.EACCES && g.provisional {
		return n.root.refuseProvisional(ctx, g, policy.Request{Op: policy.OpUnlink, Path: rel})
	}
	if errno != 0 {
		// The pending link, if any, is adopted at the next start.
		return errno
	}
	removedName()
	if g.provisional {
		// A temporary its tool removed: nothing of it is left to record.
		n.root.prov.drop(rel, uint64(st.Dev), st.Ino)
		return 0
	}
	n.root.record(g, ledger.Change{Event: ledger.EventDelete, Path: rel, PreHash: pre.Hash, PreImage: kept, Op: "unlink", Mode: mode, Finish: finish})
	return 0
}

// preImageBeforeRemoval hashes the regular file name in dirfd and keeps
// a copy of its bytes, before a change that destroys that version, or
// leaves the file reachable under another name.
func (r *Root) preImageBeforeRemoval(dirfd int, name string) (objects.Digest, string) {
	d, kept, _, _ := r.preImageForRemoval(dirfd, name, objects.UnknownUID, false)
	return d, kept
}

// preImageForRemoval hashes the regular file name in dirfd and keeps its
// bytes before an unlink or a rename over it by uid; bytes that cannot be
// kept are a *preImageLost error, and the removal is refused. With
// mayLink, the caller removes the name right after, and the bytes are
// hard-linked into the store when no writable handle can reach the inode
// (see writerGate); done, never nil, must then be called once the removal
// has happened or failed.
func (r *Root) preImageForRemoval(dirfd int, name string, uid uint32, mayLink bool) (d objects.Digest, kept string, done func(), err error) {
	done = func() {}
	fd, err := openatForHash(dirfd, name)
	if err != nil {
		return objects.Digest{}, "", done, nil
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return objects.Digest{}, "", done, nil
	}
	d, err = r.hashes.HashFd(fd)
	if err != nil {
		r.log.Error("content hash failed", "name", name, "err", err)
		return objects.Digest{}, "", done, nil
	}
	linkable := false
	if mayLink && r.mayLinkPreImage(&st, d) {
		if done, linkable = r.writeGate.tryLink(&st); linkable && !sameVersion(fd, &st) {
			// Written since it was hashed: the link would not hold d.
			done()
			done, linkable = func() {}, false
		}
	}
	kept, err = r.keepBeforeRemoval(dirfd, name, fd, &st, d, linkable, uid)
	if err != nil {
		return d, kept, done, &preImageLost{err}
	}
	return d, kept, done, nil
}

// noHandles reports whether no handle, not even a reader's, is open on
// node through the mount: a reader would see the link count of a file
// linked into the store stay 1 after its removal.
func noHandles(node *Node) bool { return node == nil || node.handles.Load() == 0 }

// describeRegularAt hashes name in dirfd if it is a regular file (other
// types have no content hash) and, when it is about to replace a version
// hashed as preHash ("" for none), describes the change by line (sed -i,
// editors). Both come from one descriptor, before the rename: the file is
// then still the version its writer's release hashed, so the digest comes
// from the cache, where after the rename its ctime has moved and its bytes
// would be hashed a second time. Without a description (the reason is
// logged) the record carries the hashes only. The descriptor is returned
// open (nil for none), for renamed.
func (r *Root) describeRegularAt(dirfd int, name, rel, preHash string) (objects.Digest, *contentChange, *movedFile) {
	fd, err := openatForHash(dirfd, name)
	if err != nil {
		return objects.Digest{}, nil, nil
	}
	m := &movedFile{fd: fd}
	if syscall.Fstat(fd, &m.st) != nil || m.st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		m.close()
		return objects.Digest{}, nil, nil
	}
	if preHash != "" {
		cc, err := r.analyze(rel, preHash, fd)
		if err == nil {
			return cc.digest, &cc, m
		}
		r.log.Warn("describing a rename over a file failed", "path", rel, "err", err)
	}
	d, err := r.hashes.HashFd(fd)
	if err != nil {
		r.log.Error("content hash failed", "name", name, "err", err)
	}
	return d, nil, m
}

// movedFile is a file about to be renamed, open, with its stat from
// before the digest was taken.
type movedFile struct {
	fd int
	st syscall.Stat_t
}

// renamed tells the hash cache that the file was renamed: the digest it
// knows for the version before stays known under the ctime the rename
// gave the file, so the next save over it (an editor's, a moment later)
// finds its pre-image's digest without reading it again.
func (m *movedFile) renamed(hashes *objects.HashCache) {
	if m == nil {
		return
	}
	var after syscall.Stat_t
	if syscall.Fstat(m.fd, &after) == nil {
		hashes.Renamed(&m.st, &after)
	}
}

func (m *movedFile) close() {
	if m != nil {
		syscall.Close(m.fd)
	}
}

// Rmdir removes an empty directory.
func (n *Node) Rmdir(ctx context.Context, name string) syscall.Errno {
	rel, g, errno := n.authorizeChild(ctx, name, syscall.EACCES, policy.Request{Op: policy.OpRmdir, IsDir: true})
	if errno != 0 {
		return errno
	}
	release, errno := n.root.dirMayMove(rel)
	if errno != 0 {
		return errno
	}
	defer release()
	if errno := n.withChild(name, func(dirfd int, name string) error {
		return n.asCallerIn(ctx, func() error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
	}); errno != 0 {
		return errno
	}
	n.root.record(g, ledger.Change{Event: ledger.EventRmdir, Path: rel, Op: "rmdir"})
	return 0
}

// Rename moves an entry. Both ends must be in scope; RENAME_NOREPLACE and
// RENAME_EXCHANGE are passed to renameat2, other flags are refused.
func (n *Node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if reason, refused := renameFlagsRefused(flags); refused {
		rel, _ := n.childPath(name)
		return n.root.refuse(ctx, policy.Request{Op: policy.OpRename, Path: rel, RenameFlags: flags}, CodeUnsupportedFlag, reason, syscall.EINVAL)
	}
	dst, ok := newParent.(*Node)
	if !ok || dst.root != n.root {
		return syscall.EXDEV
	}
	if n.isControlName(name) || dst.isControlName(newName) {
		return syscall.EACCES
	}
	rel, ok1 := n.childPath(name)
	newRel, ok2 := dst.childPath(newName)
	if !ok1 || !ok2 {
		return syscall.ENOENT
	}
	if n.root.cached && strings.HasPrefix(newRel, ".git/") {
		// git puts its index, refs and HEAD in place last, by renaming
		// a lock file: what it wrote in the worktree before (a checkout,
		// a merge, files from the upstream) is recorded, and published,
		// first, as their closes would have on the passthrough path,
		// not after git has ended. The lock file's own writer ends once
		// it is renamed (below).
		n.root.settleWritesExcept(n.childNode(name))
	}
	var srcSt, dstSt syscall.Stat_t
	dstExists := false
	errno := n.withChild(name, func(dirfd int, name string) error { return fstatat(dirfd, name, &srcSt) })
	if errno != 0 {
		return errno
	}
	errno = dst.withChild(newName, func(dirfd int, newName string) error {
		err := fstatat(dirfd, newName, &dstSt)
		dstExists = err == nil
		if err == syscall.ENOENT {
			return nil
		}
		return err
	})
	if errno != 0 {
		return errno
	}
	isDir := srcSt.Mode&syscall.S_IFMT == syscall.S_IFDIR
	isDir2 := dstExists && dstSt.Mode&syscall.S_IFMT == syscall.S_IFDIR
	if n.root.prov.holdsStat(rel, &srcSt) {
		return n.renameProvisional(ctx, name, dst, newName, rel, newRel, flags, &srcSt, dstExists)
	}
	req := policy.Request{Op: policy.OpRename, Path: rel, Path2: newRel, IsDir: isDir, IsDir2: isDir2, RenameFlags: flags}
	// A move across the edge of the governed tree is recorded by its
	// effect (see crossing.go): list what it takes along, within bounds.
	cross := policy.CrossNone
	if flags&policy.RenameExchange == 0 {
		cross = n.root.gov.Snapshot().Crossing(rel, newRel, isDir)
	}
	var crossing []crossEntry
	if cross != policy.CrossNone {
		snap := n.root.gov.Snapshot()
		governed := func(p string, dir bool) bool { return !snap.Exempt(p, dir) }
		var err error
		errno := n.withChild(name, func(dirfd int, name string) error {
			if cross == policy.CrossOut {
				crossing, _, err = listCrossing(dirfd, name, rel, newRel, governed)
			} else {
				crossing, _, err = listCrossing(dirfd, name, newRel, rel, governed)
			}
			return nil
		})
		if errno != 0 {
			return errno
		}
		if err != nil {
			return n.root.refuse(ctx, req, CodeMoveTooLarge, crossingRefusal(cross == policy.CrossOut, rel, newRel, err), syscall.EACCES)
		}
		if cross == policy.CrossOut {
			// Removed from the governed tree, each entry as its own
			// unlink or rmdir for the approval rules on deletions.
			req.Removes, req.Destroys = removals(crossing), true
		}
	}
	// listed is set if the decision had to look at what the directories
	// hold (a scope that is not a plain prefix): the rename is then
	// checked again once it is made.
	var listed atomic.Bool
	if isDir {
		req.Subtree = noteListing(&listed, n.subtreeBelow(name))
	}
	if isDir2 {
		req.Subtree2 = noteListing(&listed, dst.subtreeBelow(newName))
	}
	var destroyed func() (int64, bool)
	if dstExists && flags&policy.RenameExchange == 0 && cross != policy.CrossOut {
		destroyed = n.root.replaces(&req, &dstSt)
	}
	g, errno := n.root.authorizeSized(ctx, req, destroyed)
	if errno != 0 {
		return errno
	}
	if g.provisional {
		return n.renameToProvisional(ctx, g, name, newName, rel, newRel, flags)
	}
	// A directory moved or replaced must hold nothing git is bringing
	// from the upstream (see upstream_removal.go).
	var dirs []string
	if isDir {
		dirs = append(dirs, rel)
	}
	if isDir2 {
		dirs = append(dirs, newRel)
	}
	if len(dirs) > 0 {
		release, errno := n.root.dirMayMove(dirs...)
		if errno != 0 {
			return errno
		}
		defer release()
	}
	n.checkpointChild(name)
	if dstExists {
		// The file replaced (or exchanged) too: what its writers wrote is
		// recorded under its name before the rename gives the name to
		// another file.
		dst.checkpointChild(newName)
	}
	movedNode, swappedNode := n.childNode(name), dst.childNode(newName)
	var twins []*Node
	if n.root.cached {
		// Writers of either file on a node the directory does not hold
		// (see cachedTwins) record before the rename too, and end with
		// the moved node's.
		twins = n.root.cachedTwins(n.root.idFromStat(&srcSt), movedNode)
		if dstExists {
			twins = append(twins, n.root.cachedTwins(n.root.idFromStat(&dstSt), swappedNode)...)
		}
		for _, tw := range twins {
			tw.checkpointCachedWriter()
		}
	}
	replacedName := func() {}
	if swappedNode != nil && swappedNode != movedNode && flags&policy.RenameExchange == 0 {
		replacedName = swappedNode.holdForRemoval()
	}
	if cross == policy.CrossOut && isDir {
		checkpointBelow(movedNode)
	}
	var pre, post objects.Digest
	var kept string
	var lostErr error
	var removed []removedEntry
	var described *contentChange
	errno = withChildren(n, name, dst, newName, func(srcDir int, name string, dstDir int, newName string) error {
		if g.traced() && cross == policy.CrossOut {
			// What leaves the governed tree is destroyed for the ledger:
			// keep its bytes. What it replaces at the exempt name is not
			// governed.
			if removed, lostErr = n.root.keepMovedOut(srcDir, crossing, callerUID(ctx)); lostErr != nil {
				return syscall.ENOSPC // the cause is lostErr, answered below
			}
		} else if g.traced() {
			// What is replaced is destroyed: keep its bytes, or refuse.
			if dstExists && flags&policy.RenameExchange == 0 {
				var done func()
				pre, kept, done, lostErr = n.root.preImageForRemoval(dstDir, newName, callerUID(ctx), noHandles(swappedNode))
				defer done()
				if lostErr != nil {
					return syscall.ENOSPC // the cause is lostErr, answered below
				}
			}
			var moved *movedFile
			post, described, moved = n.root.describeRegularAt(srcDir, name, newRel, pre.Hash)
			defer moved.close()
			if err := n.asCallerIn(ctx, func() error { return unix.Renameat2(srcDir, name, dstDir, newName, uint(flags)) }, dst); err != nil {
				return err
			}
			moved.renamed(n.root.hashes)
			return nil
		}
		return n.asCallerIn(ctx, func() error { return unix.Renameat2(srcDir, name, dstDir, newName, uint(flags)) }, dst)
	})
	if lostErr != nil {
		return n.root.failChange(ctx, policy.Request{Op: policy.OpRename, Path: newRel}, lostErr)
	}
	if errno != 0 {
		return errno
	}
	replacedName()
	if n.root.cached && movedNode != nil {
		// The file has most likely been closed by the process that
		// wrote it (an editor's or sed's temporary, put in place): its
		// writer ends once the rename is recorded, or a change made at
		// the source within its pause would be taken for its own at its
		// end. Not before the rename: until the kernel learns the new
		// name, the writer's descriptor tells the file's attributes.
		defer movedNode.endCachedWriter()
	}
	for _, tw := range twins {
		defer tw.endCachedWriter()
	}
	if g.refContent != nil {
		n.root.replaceRef(ctx, dst, newName, newRel, g.refContent, srcSt.Mode)
	}
	if listed.Load() {
		if errno := n.recheckMovedTree(ctx, g, req, dst, name, newName); errno != 0 {
			return errno
		}
	}
	c := ledger.Change{Event: ledger.EventRename, Path: newRel, FromPath: rel, PreHash: pre.Hash,
		PostHash: post.Hash, Lines: post.Lines, PreImage: kept, Op: "rename", Time: time.Now()}
	if described != nil {
		c.Ranges, c.Class, c.Attribute = described.ranges, described.class, described.attribute
	}
	switch {
	case !g.traced() || cross == policy.CrossNone:
		n.root.record(g, c)
	case cross == policy.CrossOut:
		n.root.recordMovedOut(g, removed)
		leaveGovernance(movedNode)
	default:
		if errno := n.recordMovedIn(ctx, g, dst, name, newName, rel, newRel, &c, isDir, pre.Hash != "" && !isDir, isDir2); errno != 0 {
			return errno
		}
	}
	if g.actor.Versions != nil && !isDir {
		// What the session moved into place is its own version.
		g.actor.Versions.Forget(rel)
		g.actor.sawAt(n.root, newRel)
	}
	// Handles open for writing on what moved now write where it went.
	if movedNode != nil {
		n.root.retrack(movedNode, newRel)
	}
	if flags&policy.RenameExchange != 0 && swappedNode != nil {
		n.root.retrack(swappedNode, rel)
	}
	return 0
}

// childNode returns the node of child name, if the kernel knows it.
func (n *Node) childNode(name string) *Node {
	if ch := n.GetChild(name); ch != nil {
		if c, ok := ch.Operations().(*Node); ok {
			return c
		}
	}
	return nil
}

// checkpointChild records pending writes of handles open on child name, if
// the kernel knows it.
func (n *Node) checkpointChild(name string) {
	if ch := n.GetChild(name); ch != nil {
		if c, ok := ch.Operations().(*Node); ok {
			c.checkpointOpen()
		}
	}
}

// hasEntries reports whether directory rel, read as the caller, has an
// entry besides . and ..; false when it cannot be read. Only a refused
// rmdir asks (see decide): an allowed one learns it from the source.
func (r *Root) hasEntries(ctx context.Context, rel string) bool {
	found := false
	_ = r.asCaller(ctx, func() error {
		fd, err := r.openBeneath(rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		buf := make([]byte, 4096)
		for {
			nb, err := unix.Getdents(fd, buf)
			if err != nil || nb <= 0 {
				return err
			}
			// ParseDirent leaves out . and ..
			if _, count, _ := unix.ParseDirent(buf[:nb], 1, nil); count > 0 {
				found = true
				return nil
			}
		}
	})
	return found
}
