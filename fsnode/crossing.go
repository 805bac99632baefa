package fsnode

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// A rename across the edge of the governed tree (policy.Crossing) is
// recorded by its effect. A governed entry moved to an exempt name leaves
// governance: nothing records what happens to it there, so the move is
// the removal of every governed file and directory it takes along, each
// with its pre-image. An exempt entry moved to a governed name brings
// content the ledger has never seen: each file it brings is recorded as
// created by the process that moved it, with its hash and where it came
// from.
//
// Both read the whole moved tree inside the FUSE request, so the tree is
// bounded: past maxCrossingEntries governed entries or maxCrossingBytes
// of governed content the move is refused, and the agent moves it in
// smaller parts (or deletes it through the mount, one recorded unlink at
// a time).
const (
	maxCrossingEntries = 1000
	maxCrossingBytes   = 256 << 20
)

// CodeMoveTooLarge is the denial code of a move across the edge of the
// governed tree that takes along more than one move may record.
const CodeMoveTooLarge policy.Code = "MOVE_TOO_LARGE"

// crossEntry is one governed entry a move across the edge takes along.
type crossEntry struct {
	// rel is its workspace-relative path on the governed side; other is
	// its path on the exempt side.
	rel, other string
	// at is its path below the directory the move is made in.
	at    string
	mode  uint32
	size  int64
	isDir bool
}

// crossingTooLarge says that a moved tree is over a bound.
type crossingTooLarge struct{ what string }

func (e *crossingTooLarge) Error() string { return e.what }

// crossWalk lists the governed entries of a moved tree, post-order (what
// a directory holds before the directory itself), within the bounds.
type crossWalk struct {
	governed func(rel string, isDir bool) bool
	entries  []crossEntry
	seen     int
	bytes    int64
}

// listCrossing lists the governed entries that moving name in dirfd
// takes along: the entry itself and, for a directory, everything below
// it. rel and other are its paths on the governed and the exempt side;
// governed tells a governed path on the governed side.
func listCrossing(dirfd int, name, rel, other string, governed func(rel string, isDir bool) bool) ([]crossEntry, int64, error) {
	var st syscall.Stat_t
	if err := fstatat(dirfd, name, &st); err != nil {
		return nil, 0, err
	}
	w := &crossWalk{governed: governed}
	if err := w.visit(dirfd, name, crossEntry{rel: rel, other: other, at: name}, &st); err != nil {
		return nil, 0, err
	}
	return w.entries, w.bytes, nil
}

func (w *crossWalk) visit(dirfd int, name string, e crossEntry, st *syscall.Stat_t) error {
	e.mode = st.Mode
	e.isDir = st.Mode&syscall.S_IFMT == syscall.S_IFDIR
	if !w.governed(e.rel, e.isDir) {
		// Exempt on both sides (an ignored pattern below the tree): the
		// move changes nothing the ledger governs.
		return nil
	}
	if e.isDir {
		if err := w.below(dirfd, name, e); err != nil {
			return err
		}
	} else if st.Mode&syscall.S_IFMT == syscall.S_IFREG {
		e.size = st.Size
		if w.bytes += st.Size; w.bytes > maxCrossingBytes {
			return &crossingTooLarge{fmt.Sprintf("more than %d MiB of governed content", maxCrossingBytes>>20)}
		}
	}
	w.entries = append(w.entries, e)
	if len(w.entries) > maxCrossingEntries {
		return &crossingTooLarge{fmt.Sprintf("more than %d governed files and directories", maxCrossingEntries)}
	}
	return nil
}

func (w *crossWalk) below(dirfd int, name string, dir crossEntry) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir.rel, err)
	}
	ds, errno := fs.NewLoopbackDirStreamFd(fd)
	if errno != 0 {
		syscall.Close(fd)
		return fmt.Errorf("listing %s: %w", dir.rel, errno)
	}
	defer ds.Close()
	for ds.HasNext() {
		de, errno := ds.Next()
		if errno != 0 {
			return fmt.Errorf("listing %s: %w", dir.rel, errno)
		}
		if de.Name == "." || de.Name == ".." {
			continue
		}
		// Exempt entries are not recorded, but they are read: bound them
		// too.
		if w.seen++; w.seen > maxSubtreeEntries {
			return &crossingTooLarge{fmt.Sprintf("more than %d entries", maxSubtreeEntries)}
		}
		var st syscall.Stat_t
		if err := fstatat(fd, de.Name, &st); err != nil {
			return fmt.Errorf("stat %s/%s: %w", dir.rel, de.Name, err)
		}
		e := crossEntry{rel: dir.rel + "/" + de.Name, other: dir.other + "/" + de.Name, at: dir.at + "/" + de.Name}
		if err := w.visit(fd, de.Name, e, &st); err != nil {
			return err
		}
	}
	return nil
}

// removals are the entries as the approval rules see them.
func removals(entries []crossEntry) []policy.Removal {
	out := make([]policy.Removal, len(entries))
	for i, e := range entries {
		out[i] = policy.Removal{Path: e.rel, IsDir: e.isDir, Size: e.size}
	}
	return out
}

// crossingRefusal is the reason a move across the edge is refused when
// its tree cannot be listed or is too large.
func crossingRefusal(out bool, from, to string, err error) string {
	what := fmt.Sprintf("moving %s into the governed tree (to %s) records every file it brings as written", from, to)
	if out {
		what = fmt.Sprintf("moving %s out of the governed tree (to %s, exempt from governance) removes every governed file it holds, each recorded with its pre-image", from, to)
	}
	if big, ok := err.(*crossingTooLarge); ok {
		return fmt.Sprintf("%s, and it holds %s, the most one move may take: move it in smaller parts, or delete what it holds through the mount", what, big.what)
	}
	return fmt.Sprintf("%s, and it could not be read (%v), so the move is refused", what, err)
}

// removedEntry is an entry of a tree moved out, with what the record
// of its removal says.
type removedEntry struct {
	crossEntry
	pre  objects.Digest
	kept string
}

// keepMovedOut keeps the pre-image of every regular file of entries,
// below srcDir, before the move takes them where nothing records them.
// The bytes are always copied: a link into the store would share the
// inode with the file that lives on at the exempt name, and a write
// there would change the kept version.
func (r *Root) keepMovedOut(srcDir int, entries []crossEntry, uid uint32) ([]removedEntry, error) {
	out := make([]removedEntry, len(entries))
	for i, e := range entries {
		out[i].crossEntry = e
		if e.mode&syscall.S_IFMT != syscall.S_IFREG {
			continue
		}
		fd, err := withoutNoatimeOnEPERM(hashOpenFlags|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, func(flags int) (int, error) {
			return openBeneath(srcDir, e.at, flags, 0)
		})
		if err != nil {
			return nil, &preImageLost{fmt.Errorf("reading %s, which the move takes out of the governed tree: %w", e.rel, err)}
		}
		d, err := r.hashes.HashFd(fd)
		if err == nil {
			out[i].pre = d
			out[i].kept, err = r.keep(fd, d, uid)
		}
		syscall.Close(fd)
		if err != nil {
			// Fail closed: what the move destroys for the ledger must be
			// undoable, as for an unlink.
			return nil, &preImageLost{err}
		}
	}
	return out, nil
}

// recordMovedOut records a move out of the governed tree as the removal
// of each governed entry it took along, in the order rm -rf removes
// them (a revert, which runs newest first, remakes each directory before
// what it held).
func (r *Root) recordMovedOut(g grant, removed []removedEntry) {
	now := time.Now()
	for _, e := range removed {
		c := ledger.Change{Path: e.rel, Op: "rename", Time: now,
			Reason: fmt.Sprintf("moved out of the governed tree to %s (exempt from governance): recorded as its removal", e.other)}
		if e.isDir {
			c.Event = ledger.EventRmdir
		} else {
			c.Event, c.PreHash, c.PreImage = ledger.EventDelete, e.pre.Hash, e.kept
			if e.mode&syscall.S_IFMT == syscall.S_IFREG {
				c.Mode = fmt.Sprintf("%04o", e.mode&0o7777)
			}
		}
		r.record(g, c)
		g.after = nil // what follows the change runs once
	}
}

// recordMovedIn records a move into the governed tree as the creation of
// each governed entry it brought, parents first, read where they are
// now. top, if set, is the record of the moved entry itself when it
// replaced a governed file (a write, with that file's pre-image); a
// directory that replaced an empty one has no record of its own.
func (r *Root) recordMovedIn(g grant, dstDir int, entries []crossEntry, top *ledger.Change, dstExisted bool) {
	now := time.Now()
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		isTop := i == len(entries)-1
		c := ledger.Change{Path: e.rel, FromPath: e.other, Op: "rename", Time: now}
		switch e.mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			if isTop && dstExisted {
				continue
			}
			c.Event = ledger.EventMkdir
		case syscall.S_IFREG:
			c.Event = ledger.EventCreate
			if isTop && top != nil {
				c = *top
			}
			d := r.digestBeneath(dstDir, e.at, e.rel)
			c.PostHash, c.Lines = d.Hash, d.Lines
		case syscall.S_IFLNK:
			c.Event = ledger.EventSymlink
			if target, err := readlinkBeneath(dstDir, e.at); err == nil {
				c.PostHash = ledger.HashBytes([]byte(target))
			}
		default:
			c.Event = ledger.EventMknod
		}
		r.record(g, c)
		g.after = nil
	}
}

// digestBeneath hashes the regular file at rel below dirfd (at is its
// path there), without following a symlink; a file that cannot be read
// has no hash, and the failure is logged.
func (r *Root) digestBeneath(dirfd int, at, rel string) objects.Digest {
	fd, err := withoutNoatimeOnEPERM(hashOpenFlags|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, func(flags int) (int, error) {
		return openBeneath(dirfd, at, flags, 0)
	})
	if err != nil {
		r.log.Error("reading a file moved into the governed tree failed", "path", rel, "err", err)
		return objects.Digest{}
	}
	defer syscall.Close(fd)
	d, err := r.hashes.HashFd(fd)
	if err != nil {
		r.log.Error("content hash failed", "path", rel, "err", err)
	}
	return d
}

// readlinkBeneath reads the symlink at path at below dirfd, never
// following one on the way.
func readlinkBeneath(dirfd int, at string) (string, error) {
	dir, name := splitRel(at)
	fd, err := openBeneath(dirfd, dir, unix.O_PATH|syscall.O_DIRECTORY, 0)
	if err != nil {
		return "", err
	}
	defer syscall.Close(fd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// undoMoveIn moves an entry back where it came from after its tree
// turned out to be too large to record once moved; if that fails, the
// move stands and is logged.
func (n *Node) undoMoveIn(ctx context.Context, dst *Node, name, newName string) syscall.Errno {
	return withChildren(n, name, dst, newName, func(srcDir int, name string, dstDir int, newName string) error {
		return n.root.asCaller(ctx, func() error {
			return unix.Renameat2(dstDir, newName, srcDir, name, unix.RENAME_NOREPLACE)
		})
	})
}

// recordMovedIn records a move into the governed tree, made, from what
// now sits at newName in dst: listed again, since the first listing was
// made before the move and more may have joined the tree at its exempt
// place meanwhile. A tree that has grown past the bounds is moved back
// and the move refused. replaced says that the moved file replaced a
// governed one, whose pre-image c, the rename's record, carries; isDir
// that a directory moved; dirReplaced that the moved directory replaced an empty one.
func (n *Node) recordMovedIn(ctx context.Context, g grant, dst *Node, name, newName, rel, newRel string, c *ledger.Change, isDir, replaced, dirReplaced bool) syscall.Errno {
	snap := n.root.gov.Snapshot()
	governed := func(p string, dir bool) bool { return !snap.Exempt(p, dir) }
	var top *ledger.Change
	if replaced {
		w := *c
		w.Event, w.FromPath = ledger.EventWrite, rel
		top = &w
	}
	var listErr error
	errno := dst.withChild(newName, func(dstDir int, newName string) error {
		var entries []crossEntry
		if entries, _, listErr = listCrossing(dstDir, newName, newRel, rel, governed); listErr == nil {
			n.root.recordMovedIn(g, dstDir, entries, top, dirReplaced)
		}
		return nil
	})
	if errno == 0 && listErr == nil {
		return 0
	}
	if listErr == nil {
		listErr = errno
	}
	req := policy.Request{Op: policy.OpRename, Path: rel, Path2: newRel, IsDir: isDir}
	reason := crossingRefusal(false, rel, newRel, listErr)
	if undo := n.undoMoveIn(ctx, dst, name, newName); undo != 0 {
		// The move stands: record it as the rename it was, so that the
		// ledger at least names what arrived, and say why it is short.
		n.root.log.Error("undoing a move into the governed tree that could not be recorded failed", "from", rel, "to", newRel, "err", undo)
		c.Code, c.Reason = string(CodeMoveTooLarge), reason+fmt.Sprintf("; moving it back failed (%v), so it stays where it went", undo)
		n.root.record(g, *c)
		return 0
	}
	return n.root.refuse(ctx, req, CodeMoveTooLarge, reason, syscall.EACCES)
}

// eachOpenBelow calls fn for every handle open on node and on the nodes
// the kernel knows below it: the handles a directory move takes along.
func eachOpenBelow(node *Node, fn func(*File)) {
	if node == nil {
		return
	}
	todo := []*Node{node}
	for i := 0; i < len(todo); i++ {
		n := todo[i]
		n.openMu.Lock()
		open := slices.Clone(n.open)
		n.openMu.Unlock()
		for _, f := range open {
			fn(f)
		}
		for _, ch := range n.Children() {
			if c, ok := ch.Operations().(*Node); ok {
				todo = append(todo, c)
			}
		}
	}
}

// checkpointBelow records what the handles open for writing on node and
// below it have written, before a move out of the governed tree records
// their removal: the ledger shows each file's last governed content
// before it shows the file gone.
func checkpointBelow(node *Node) {
	eachOpenBelow(node, func(f *File) {
		if f.track.Load() != nil {
			f.checkpoint(false)
		}
	})
}

// leaveGovernance marks the handles open for writing on node and below
// it as outside the governed tree, where a move out has taken their
// files: their later writes are not recorded under the names the files
// no longer have.
func leaveGovernance(node *Node) {
	eachOpenBelow(node, func(f *File) {
		if t := f.track.Load(); t != nil {
			t.left.Store(true)
		}
	})
}

// rejoin starts recording the writes of f again, whose file a move out
// of the governed tree had taken out and a move has brought back to rel:
// from the content it has now, which the move's own record names.
func (r *Root) rejoin(rel string, f *File, t *tracking) {
	if r.gov.Snapshot().Exempt(rel, false) {
		return // still outside
	}
	rfd, err := reopenReadOnly(f.fd)
	if err != nil {
		r.log.Error("a handle moved back under governance could not be tracked", "path", rel, "err", err)
		return
	}
	defer syscall.Close(rfd)
	d, err := r.hashes.HashFd(rfd)
	if err != nil {
		r.log.Error("a handle moved back under governance could not be tracked", "path", rel, "err", err)
		return
	}
	kept := r.keepCopy(rfd, d)
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		r.log.Error("a handle moved back under governance could not be tracked", "path", rel, "err", err)
		return
	}
	t.mu.Lock()
	t.base, t.baseKey, t.preImage = d, objects.VersionOf(&st), kept
	t.mu.Unlock()
	t.left.Store(false)
}
