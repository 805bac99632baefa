package fsnode

import (
	"errors"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"

	"github.com/intentfs/intentfs/internal/srcwatch"
)

// rootAttrTimeout is how long the kernel keeps the mount point's own
// attributes, whatever the mount's timeout: a stat of the mount point
// then reaches the daemon at least that often, so a mount whose daemon
// died says ENOTCONN there within it (what mountpoint(1), intentfs
// status and users check), while files the kernel knows keep answering
// from its cache.
const rootAttrTimeout = time.Second

// SourceChanged brings what the kernel caches of the mount (entries,
// attributes, listings, file pages) in line with changes seen in the
// source, so the mount can let the kernel keep them for long: a change
// made through the mount updates the kernel's caches as it is made, and
// one made directly in the source (by someone else, or by intentfs's
// own ledger, sidecars and reverts) arrives here.
//
// A name is invalidated only when the kernel's view of it differs from
// the source's: the entry the mount knows (if any) is not the inode now
// there. That is what an out-of-band create, removal or move looks like,
// while the events of a change made through the mount find the kernel
// already up to date and cost nothing. Data and attribute changes always
// invalidate the inode's attributes (and, for data, its pages): the
// kernel cannot be asked what it holds. Call it from one goroutine that
// holds no lock of the mount: the kernel may wait for a request in
// flight before it can invalidate.
func (r *Root) SourceChanged(evs []srcwatch.Event) {
	n := r.top
	type key struct {
		kind      srcwatch.Kind
		dir, name string
	}
	seen := make(map[key]bool, len(evs))
	for _, ev := range evs {
		k := key{ev.Kind, ev.Dir, ev.Name}
		if seen[k] {
			continue
		}
		seen[k] = true
		switch ev.Kind {
		case srcwatch.Overflow:
			n.invalidateAll(n.Root())
			clear(seen)
		case srcwatch.Entry:
			n.entryChanged(ev.Dir, ev.Name)
		case srcwatch.Content, srcwatch.Attr:
			off := int64(-1) // attributes only
			if ev.Kind == srcwatch.Content {
				off = 0 // and every cached page
			}
			if ino := n.knownInode(joinRel(ev.Dir, ev.Name)); ino != nil {
				ino.NotifyContent(off, 0)
			} else if ino := n.linkedInode(ev.Dir, ev.Name); ino != nil {
				ino.NotifyContent(off, 0)
			}
		}
	}
}

// knownInode returns the inode the kernel knows at rel, or nil when it
// knows none (then it caches nothing there). The control directory is
// not the source's.
func (n *Node) knownInode(rel string) *fs.Inode {
	ino := n.Root()
	if rel == "" {
		return ino
	}
	for c := range strings.SplitSeq(rel, "/") {
		if ino.IsRoot() && c == ControlDirName && n.root.control != nil {
			return nil
		}
		if ino = ino.GetChild(c); ino == nil {
			return nil
		}
	}
	return ino
}

// entryChanged invalidates name in dir when the source holds a different
// inode there than the one the mount knows, or none.
func (n *Node) entryChanged(dir, name string) {
	parent := n.knownInode(dir)
	if parent == nil || name == "" || (parent.IsRoot() && name == ControlDirName && n.root.control != nil) {
		return
	}
	child := parent.GetChild(name)
	var st syscall.Stat_t
	var err error = syscall.ENOENT
	if dirfd, derr := n.root.openDir(dir); derr == nil {
		err = fstatat(dirfd, name, &st)
		syscall.Close(dirfd)
	} else if !errors.Is(derr, syscall.ENOENT) && !errors.Is(derr, syscall.ENOTDIR) {
		err = derr
	}
	gone := errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR)
	switch {
	case child == nil && gone:
		return // the kernel may cache "no such file": it is right
	case child != nil && err == nil && child.StableAttr().Ino == n.root.idFromStat(&st).Ino:
		return // the kernel knows the inode that is there
	case child != nil && gone:
		// NotifyDelete also tells inotify watchers of the mount.
		if parent.NotifyDelete(name, child) != 0 {
			parent.NotifyEntry(name)
		}
	default:
		parent.NotifyEntry(name)
	}
	parent.NotifyContent(0, 0) // the listing and the directory's times
}

// invalidateAll drops every entry the kernel caches below dir, and the
// listings and attributes of every inode it knows: after lost events,
// anything may have changed. Names the kernel caches as absent cannot be
// listed; they expire after the mount's negative timeout.
func (n *Node) invalidateAll(dir *fs.Inode) {
	dir.NotifyContent(0, 0)
	for name, child := range dir.Children() {
		if dir.IsRoot() && name == ControlDirName && n.root.control != nil {
			continue
		}
		if child.IsDir() {
			n.invalidateAll(child)
		} else {
			child.NotifyContent(0, 0)
		}
		dir.NotifyEntry(name)
	}
}

// maxLinkSearch bounds the inodes visited looking for another name of a
// hard-linked file.
const maxLinkSearch = 1 << 16

// linkedInode finds the inode the kernel knows for a file it does not
// know by this name: a file with several hard links is one inode in the
// mount, and the kernel may have met it under another name. It returns
// nil for a file with one link, or when the search finds nothing within
// its bound.
func (n *Node) linkedInode(dir, name string) *fs.Inode {
	var st syscall.Stat_t
	dirfd, err := n.root.openDir(dir)
	if err != nil {
		return nil
	}
	err = fstatat(dirfd, name, &st)
	syscall.Close(dirfd)
	if err != nil || st.Nlink < 2 || st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return nil
	}
	want := n.root.idFromStat(&st).Ino
	visited := 0
	var walk func(d *fs.Inode) *fs.Inode
	walk = func(d *fs.Inode) *fs.Inode {
		for _, child := range d.Children() {
			if visited++; visited > maxLinkSearch {
				return nil
			}
			if child.StableAttr().Ino == want {
				return child
			}
			if child.IsDir() && child.Operations() != n.root.control {
				if found := walk(child); found != nil {
					return found
				}
			}
		}
		return nil
	}
	return walk(n.Root())
}
