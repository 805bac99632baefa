package fsnode

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/policy"
)

// maxSubtreeEntries bounds the listing that deciding a directory move may
// take. Only scopes that are not plain prefixes (dir/**) need it; beyond
// the bound the move is refused and the agent moves files in smaller
// steps.
const maxSubtreeEntries = 10000

// subtreeBelow lists directory name in n for the policy, never following a
// symlink (a link below is an entry like any other, not a way out).
func (n *Node) subtreeBelow(name string) policy.Subtree {
	return func(fn func(rel string, isDir bool) bool) error {
		var walkErr error
		count := 0
		errno := n.withChild(name, func(dirfd int, name string) error {
			_, walkErr = walkBelow(dirfd, name, "", &count, fn)
			return nil
		})
		if walkErr != nil {
			return walkErr
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}

// walkBelow calls fn for every entry below name in dirfd, depth first. It
// reports false once fn asked to stop.
func walkBelow(dirfd int, name, prefix string, count *int, fn func(string, bool) bool) (bool, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false, err
	}
	ds, errno := fs.NewLoopbackDirStreamFd(fd)
	if errno != 0 {
		syscall.Close(fd)
		return false, errno
	}
	defer ds.Close()
	for ds.HasNext() {
		e, errno := ds.Next()
		if errno != 0 {
			return false, errno
		}
		if e.Name == "." || e.Name == ".." {
			continue
		}
		if *count++; *count > maxSubtreeEntries {
			return false, policy.ErrSubtreeTooLarge
		}
		typ := e.Mode & syscall.S_IFMT
		if typ == 0 { // the filesystem gave no d_type
			var st syscall.Stat_t
			if err := fstatat(fd, e.Name, &st); err != nil {
				return false, fmt.Errorf("stat %s: %w", relBelow(prefix, e.Name), err)
			}
			typ = st.Mode & syscall.S_IFMT
		}
		path := relBelow(prefix, e.Name)
		isDir := typ == syscall.S_IFDIR
		if !fn(path, isDir) {
			return false, nil
		}
		if isDir {
			more, err := walkBelow(fd, e.Name, path, count, fn)
			if err != nil || !more {
				return false, err
			}
		}
	}
	return true, nil
}

func relBelow(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}

// noteListing wraps a Subtree so that calling it sets listed.
func noteListing(listed *atomic.Bool, list policy.Subtree) policy.Subtree {
	return func(fn func(rel string, isDir bool) bool) error {
		listed.Store(true)
		return list(fn)
	}
}

// recheckMovedTree decides a directory rename again after it was made,
// on what now sits where it went. The first decision listed the
// directory before the rename; an entry created in it through the mount
// between that listing and the rename (under another intent the agent
// selected meanwhile, say) would have moved along unchecked. Once the
// rename is done nothing more can join the moved tree at its old place,
// so this second listing sees everything that moved. If it finds what
// the grant's intent does not cover, the rename is undone and refused.
func (n *Node) recheckMovedTree(ctx context.Context, g grant, req policy.Request, dst *Node, name, newName string) syscall.Errno {
	exchange := req.RenameFlags&policy.RenameExchange != 0
	again := req
	again.Intent = g.intent
	again.Subtree, again.Subtree2 = nil, nil
	if req.IsDir {
		again.Subtree = dst.subtreeBelow(newName) // what moved, now at the destination
	}
	if exchange && req.IsDir2 {
		again.Subtree2 = n.subtreeBelow(name) // what moved the other way
	}
	snap := n.root.gov.Snapshot()
	d := observed(snap, again, snap.Decide(again))
	if d.Allow {
		return 0
	}
	undo := uint(unix.RENAME_NOREPLACE)
	if exchange {
		undo = unix.RENAME_EXCHANGE
	}
	errno := withChildren(n, name, dst, newName, func(srcDir int, name string, dstDir int, newName string) error {
		return n.root.asCaller(ctx, func() error { return unix.Renameat2(dstDir, newName, srcDir, name, undo) })
	})
	d.Reason = "the directory took along entries added while its move was being checked: " + d.Reason
	if errno != 0 {
		d.Reason += fmt.Sprintf("; undoing the move failed (%v), so it stays where it went", errno)
		n.root.log.Error("undoing a directory move that took out-of-scope entries along failed", "from", req.Path, "to", req.Path2, "err", errno)
	}
	n.root.gov.Denied(again, d, g.proc, g.actor.Session)
	if errno != 0 {
		return 0 // the move stands and is recorded by the caller, as it happened
	}
	return syscall.EACCES
}
