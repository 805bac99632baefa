package fsnode

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/upstreamplan"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// git checks a file out by removing it and creating it anew: outside the
// scope, a removal toward the upstream's other content there is let
// through only as the first half of that pair (see upstreamplan.Removals
// for the rules and the holes they close). This file is the mount's side:
// the unnamed copy made before the removal, the watch of the git process,
// and the put-back.

const (
	// maxHeldBytes bounds the copy a removal keeps: a larger file is not
	// removed outside the scope.
	maxHeldBytes = 64 << 20
	// removerPoll is how often a watcher looks at the time while it
	// waits for the git process to end.
	removerPoll = 500 * time.Millisecond
)

// upstreamRemoval is a file git removed outside the scope, which it must
// write again.
type upstreamRemoval struct {
	hash     string
	mode     uint32
	uid, gid uint32
	g        grant
	// held is a descriptor of the unnamed copy that is put back.
	held int
}

// upstreamRemovals are the removals waiting for their creation and the
// files being created (upstreamplan.Removals), and the lock that keeps
// the directories above them from moving.
type upstreamRemovals struct {
	// dirs is held for writing by a removal or rename of a directory,
	// and for reading while a removal or creation is noted or published:
	// no directory above one moves meanwhile.
	dirs sync.RWMutex
	upstreamplan.Removals[upstreamRemoval, *upstreamFile]
}

// dirMayMove says, for a removal or rename of directories rels, whether
// a removal or creation below one of them waits (EBUSY), and takes u.dirs
// for writing until release is called.
func (r *Root) dirMayMove(rels ...string) (release func(), errno syscall.Errno) {
	u := &r.upstreamRemovals
	u.dirs.Lock()
	for _, rel := range rels {
		if p := u.PendingUnder(rel); p != "" {
			u.dirs.Unlock()
			r.log.Info("a directory is busy: git is bringing the upstream's file below it", "dir", rel, "path", p)
			return nil, syscall.EBUSY
		}
	}
	return u.dirs.Unlock, 0
}

// upstreamRemoved keeps what git is about to remove at rel (name in
// dirfd) so it can be put back, and starts watching the git process. It
// says why not when the removal must be refused.
func (r *Root) upstreamRemoved(dirfd int, name, rel string, node *Node, g grant) (ledger.Change, upstreamRemoval, string) {
	var st syscall.Stat_t
	if err := fstatat(dirfd, name, &st); err != nil {
		return ledger.Change{}, upstreamRemoval{}, "it could not be read: " + err.Error()
	}
	if g.proc == nil {
		return ledger.Change{}, upstreamRemoval{}, "the git process is unknown"
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return ledger.Change{}, upstreamRemoval{}, "it is not a regular file"
	}
	held, err := holdCopy(dirfd, name, &st)
	if err != nil {
		return ledger.Change{}, upstreamRemoval{}, "a copy to put back could not be made (" + err.Error() + ")"
	}
	pre, kept := r.preImageBeforeRemoval(dirfd, name)
	if pre.Hash == "" {
		syscall.Close(held)
		return ledger.Change{}, upstreamRemoval{}, "its content could not be read"
	}
	rm := upstreamRemoval{hash: pre.Hash, mode: st.Mode & 0o7777, uid: st.Uid, gid: st.Gid, g: g, held: held}
	start, why := r.upstreamRemovals.Put(rel, g.proc.Pid, time.Now(), rm)
	if why != "" {
		syscall.Close(held)
		return ledger.Change{}, upstreamRemoval{}, why
	}
	if start {
		go r.watchRemover(g.proc.Pid)
	}
	return ledger.Change{Event: ledger.EventDelete, Path: rel, PreHash: pre.Hash, PreImage: kept, Op: "unlink"}, rm, ""
}

// holdCopy makes an unnamed copy of the regular file name in dirfd (st),
// with its owner and mode, in the same directory, before it is removed:
// linking it in later needs no new inode (the removal frees one), and no
// byte of it can change meanwhile (only the daemon holds it).
func holdCopy(dirfd int, name string, st *syscall.Stat_t) (int, error) {
	if st.Size > maxHeldBytes {
		return -1, fmt.Errorf("%d bytes is over the %d-byte limit", st.Size, maxHeldBytes)
	}
	src, err := openatForHash(dirfd, name)
	if err != nil {
		return -1, err
	}
	defer syscall.Close(src)
	fd, err := unix.Openat(dirfd, ".", unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, err
	}
	ok := false
	defer func() {
		if !ok {
			syscall.Close(fd)
		}
	}()
	n, err := copyFile(fd, src, maxHeldBytes+1)
	if err != nil {
		return -1, err
	}
	if n != st.Size {
		return -1, fmt.Errorf("it changed while it was copied")
	}
	if err := syscall.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
		return -1, err
	}
	if err := syscall.Fchmod(fd, st.Mode&0o7777); err != nil {
		return -1, err
	}
	ok = true
	return fd, nil
}

// watchRemover puts back the removals of the git process pid when they
// have waited upstreamplan.RemovalFor, or when the process ends.
func (r *Root) watchRemover(pid uint32) {
	// A pidfd says when the process ends (and is not fooled by a reused
	// pid); without one, the time bound alone applies.
	pidfd, err := unix.PidfdOpen(int(pid), 0)
	if err == nil {
		defer syscall.Close(pidfd)
	}
	for {
		ended := false
		if err != nil {
			time.Sleep(removerPoll)
		} else {
			fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
			n, perr := unix.Poll(fds, int(removerPoll/time.Millisecond))
			ended = perr == nil && n > 0
		}
		if r.closed.Load() {
			return // Close puts back what is left
		}
		// The removals leave the pending map and are put back under
		// dirs: no directory above one is removed or renamed between.
		r.upstreamRemovals.dirs.RLock()
		rms, done := r.upstreamRemovals.Due(pid, ended, false, time.Now())
		why := "git did not write it again within " + upstreamplan.RemovalFor.String()
		if ended {
			why = "git ended without writing it again"
		}
		r.settleRemovals(rms, why)
		r.upstreamRemovals.dirs.RUnlock()
		if done {
			return
		}
	}
}

// settleRemovals puts back each removal whose file git did not write
// again, and records why.
func (r *Root) settleRemovals(rms map[string]upstreamRemoval, why string) {
	for rel, rm := range rms {
		r.putBackRemoval(rel, rm, why)
	}
}

// completeRemoval ends a removal whose creation followed.
func (r *Root) completeRemoval(rm upstreamRemoval) {
	defer r.upstreamRemovals.Settled()
	syscall.Close(rm.held)
}

// putBackRemoval puts back the file removal rm took from rel, unless
// something is there again, and records the denial. The caller took rm
// (Take or Due), and settles it here, and holds dirs for reading
// since before it took it.
func (r *Root) putBackRemoval(rel string, rm upstreamRemoval, why string) {
	defer r.upstreamRemovals.Settled()
	defer syscall.Close(rm.held)
	var pid uint32
	if rm.g.proc != nil {
		pid = rm.g.proc.Pid
	}
	r.upstreamRemovals.Cool(rel, pid)
	dir, name := splitRel(rel)
	dirfd := r.rootFd
	if dir != "" {
		var err error
		if dirfd, err = r.openDir(dir); err != nil {
			r.log.Error("putting back what git removed outside the scope", "path", rel, "err", err)
			r.denyRemoval(rel, rm, why+"; it could not be put back ("+err.Error()+"; its bytes are kept as "+rm.hash+")")
			return
		}
		defer syscall.Close(dirfd)
	}
	var st syscall.Stat_t
	if fstatat(dirfd, name, &st) == nil {
		return // git wrote it again, or a human did
	}
	if err := r.putBack(dirfd, name, rm); err != nil {
		r.log.Error("putting back what git removed outside the scope", "path", rel, "err", err)
		r.denyRemoval(rel, rm, why+"; it could not be put back ("+err.Error()+"; its bytes are kept as "+rm.hash+")")
		return
	}
	r.gov.Record(ledger.Change{Event: ledger.EventRevert, Path: rel, PostHash: rm.hash, Intent: rm.g.intent, Process: rm.g.proc,
		Session: rm.g.actor.Session, Op: "undo", Reason: "put back: git removed it outside the scope, and " + why, Time: time.Now()})
	r.denyRemoval(rel, rm, why+"; the mount put it back")
	r.forgetEntry(dir, name)
}

func (r *Root) denyRemoval(rel string, rm upstreamRemoval, why string) {
	r.recordUpstreamDenial(rm.g, policy.OpUnlink, rel, "git removed "+rel+" outside the scope toward the upstream's content, and "+why)
}

// putBack links the copy made before the removal back as name in dirfd,
// unless something is there by then.
func (r *Root) putBack(dirfd int, name string, rm upstreamRemoval) error {
	return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", rm.held), dirfd, name, unix.AT_SYMLINK_FOLLOW)
}

// putBackAll puts back, at unmount, every removal still waiting, and
// waits for put-backs in progress: the source must not keep a removal git
// never completed.
func (r *Root) putBackAll() {
	r.upstreamRemovals.dirs.RLock()
	rms, _ := r.upstreamRemovals.Due(0, true, true, time.Now())
	r.settleRemovals(rms, "the mount ended before git wrote it again")
	r.upstreamRemovals.dirs.RUnlock()
	r.upstreamRemovals.Wait()
}

// forgetEntry tells the kernel, in the background (never inside the
// request that caused it), that name in dir changed behind it.
func (r *Root) forgetEntry(dir, name string) {
	if r.closed.Load() {
		return
	}
	go func() {
		if !r.closed.Load() {
			r.top.entryChanged(dir, name)
		}
	}()
}

// unlinkForUpstream is Unlink of a file git removes outside the scope to
// write the upstream's other content there (g.upstream.Rewrite).
func (n *Node) unlinkForUpstream(ctx context.Context, name, rel string, g grant) syscall.Errno {
	n.checkpointChild(name)
	// No directory above moves while the removal is noted and made.
	n.root.upstreamRemovals.dirs.RLock()
	defer n.root.upstreamRemovals.dirs.RUnlock()
	var c ledger.Change
	why := ""
	errno := n.withChild(name, func(dirfd int, name string) error {
		if c, _, why = n.root.upstreamRemoved(dirfd, name, rel, n.childNode(name), g); why != "" {
			return nil
		}
		err := n.root.asCaller(ctx, func() error { return unix.Unlinkat(dirfd, name, 0) })
		if err != nil {
			// Nothing was removed: nothing to put back.
			if rm, ok := n.root.upstreamRemovals.Take(rel); ok {
				n.root.completeRemoval(rm)
			}
		}
		return err
	})
	if why != "" {
		return n.root.denyUpstream(ctx, g, policy.OpUnlink, rel, "git may not remove "+rel+" outside the scope: "+why)
	}
	if errno != 0 {
		return errno
	}
	n.root.record(g, c)
	return 0
}
