package fsnode

import (
	"context"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// git checks a file out by removing it and creating it anew. Outside the
// scope, a removal toward the upstream's other content there is let
// through only as the first half of that pair: what it removed is kept,
// and put back unless git's verified creation (upstreamFile) follows
// before the git process ends, or within upstreamRemovalFor.

const (
	// maxUpstreamRemovals bounds the removals waiting for their creation;
	// past it, such removals are refused, never forgotten.
	maxUpstreamRemovals = 4096
	// upstreamRemovalFor is how long a removal waits for its creation
	// while the git process that made it lives: git removes and creates
	// a file in one step.
	upstreamRemovalFor = time.Minute
	// removerPoll is how often a watcher looks at the time while it
	// waits for the git process to end.
	removerPoll = time.Second
)

// upstreamRemoval is a file git removed outside the scope, which it must
// write again.
type upstreamRemoval struct {
	hash     string
	mode     uint32
	uid, gid uint32
	at       time.Time
	g        grant
}

// upstreamRemovals are the removals waiting for their creation, by path,
// and the git processes watched for them.
type upstreamRemovals struct {
	mu      sync.Mutex
	m       map[string]upstreamRemoval
	watched map[uint32]time.Time // pid → its last removal
	// busy counts put-backs in progress, which Close waits for.
	busy sync.WaitGroup
}

// put notes a removal at rel by pid and reports whether the watcher of
// pid must be started; false with ok false when there is no room.
func (u *upstreamRemovals) put(rel string, pid uint32, rm upstreamRemoval) (start, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m, u.watched = map[string]upstreamRemoval{}, map[uint32]time.Time{}
	}
	if _, dup := u.m[rel]; !dup && len(u.m) >= maxUpstreamRemovals {
		return false, false
	}
	u.m[rel] = rm
	_, watching := u.watched[pid]
	u.watched[pid] = rm.at
	return !watching, true
}

// take returns and forgets the removal at rel.
func (u *upstreamRemovals) take(rel string) (upstreamRemoval, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	rm, ok := u.m[rel]
	if ok {
		delete(u.m, rel)
		u.busy.Add(1)
	}
	return rm, ok
}

// lastBy says when pid last removed a file, and whether it is watched.
func (u *upstreamRemovals) lastBy(pid uint32) time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.watched[pid]
}

// sweep takes every removal by pid (all of them if all), and ends pid's
// watch.
func (u *upstreamRemovals) sweep(pid uint32, all bool) map[string]upstreamRemoval {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]upstreamRemoval{}
	for rel, rm := range u.m {
		if all || (rm.g.proc != nil && rm.g.proc.Pid == pid) {
			out[rel] = rm
			delete(u.m, rel)
			u.busy.Add(1)
		}
	}
	if all {
		clear(u.watched)
	} else {
		delete(u.watched, pid)
	}
	return out
}

// upstreamRemoved keeps what git is about to remove at rel (name in
// dirfd) so it can be put back, and starts watching the git process. It
// says why not when the removal must be refused.
func (r *Root) upstreamRemoved(dirfd int, name, rel string, node *Node, g grant) (ledger.Change, string) {
	var st syscall.Stat_t
	if err := fstatat(dirfd, name, &st); err != nil {
		return ledger.Change{}, "it could not be read: " + err.Error()
	}
	pre, kept := r.preImageBeforeRemoval(dirfd, name, node)
	if pre.Hash == "" || (kept != preImageStored && kept != preImageEmpty) {
		return ledger.Change{}, "its content could not be kept (" + kept + "), so it could not be put back"
	}
	if g.proc == nil {
		return ledger.Change{}, "the git process is unknown"
	}
	rm := upstreamRemoval{hash: pre.Hash, mode: st.Mode & 0o7777, uid: st.Uid, gid: st.Gid, at: time.Now(), g: g}
	start, ok := r.upstreamRemovals.put(rel, g.proc.Pid, rm)
	if !ok {
		return ledger.Change{}, "too many removals are waiting for git to write their files again"
	}
	if start {
		go r.watchRemover(g.proc.Pid)
	}
	return ledger.Change{Event: ledger.EventDelete, Path: rel, PreHash: pre.Hash, PreImage: kept, Op: "unlink"}, ""
}

// watchRemover waits for the git process pid to end, or to have removed
// nothing for upstreamRemovalFor, then puts back what it removed and did
// not write again.
func (r *Root) watchRemover(pid uint32) {
	// A pidfd says when the process ends (and is not fooled by a reused
	// pid); without one, the time bound alone applies.
	pidfd, err := unix.PidfdOpen(int(pid), 0)
	if err == nil {
		defer syscall.Close(pidfd)
	}
	for !r.closed.Load() {
		if time.Since(r.upstreamRemovals.lastBy(pid)) > upstreamRemovalFor {
			break
		}
		if err != nil {
			time.Sleep(removerPoll)
			continue
		}
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		n, perr := unix.Poll(fds, int(removerPoll/time.Millisecond))
		if perr == nil && n > 0 {
			break // the process ended
		}
	}
	r.settleRemovals(r.upstreamRemovals.sweep(pid, false), "git ended without writing it again")
}

// settleRemovals puts back each removal whose file git did not write
// again, and records why.
func (r *Root) settleRemovals(rms map[string]upstreamRemoval, why string) {
	for rel, rm := range rms {
		r.putBackRemoval(rel, rm, why)
	}
}

// putBackRemoval puts back the file removal rm took from rel, unless
// something is there again, and records the denial. The caller took rm
// (take or sweep), which counted it in busy.
func (r *Root) putBackRemoval(rel string, rm upstreamRemoval, why string) {
	defer r.upstreamRemovals.busy.Done()
	dir, name := splitRel(rel)
	dirfd := r.rootFd
	if dir != "" {
		var err error
		if dirfd, err = openDir(r.rootFd, dir); err != nil {
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

// putBack recreates the file rm describes as name in dirfd, from the
// object store, whole or not at all: it is written unnamed and linked in
// place, unless something is there by then.
func (r *Root) putBack(dirfd int, name string, rm upstreamRemoval) error {
	var b []byte
	if rm.hash != ledger.EmptyHash {
		if r.objects == nil {
			return syscall.ENOENT
		}
		var err error
		if b, err = r.objects.Read(rm.hash); err != nil {
			return err
		}
	}
	fd, err := unix.Openat(dirfd, ".", unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, rm.mode&0o777)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	if err := syscall.Fchown(fd, int(rm.uid), int(rm.gid)); err != nil {
		return err
	}
	if err := syscall.Fchmod(fd, rm.mode); err != nil {
		return err
	}
	return unix.Linkat(fd, "", dirfd, name, unix.AT_EMPTY_PATH)
}

// putBackAll puts back, at unmount, every removal still waiting, and
// waits for put-backs in progress: the source must not keep a removal git
// never completed.
func (r *Root) putBackAll() {
	r.settleRemovals(r.upstreamRemovals.sweep(0, true), "the mount ended before git wrote it again")
	r.upstreamRemovals.busy.Wait()
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
// write the upstream's other content there (g.upstream.rewrite).
func (n *Node) unlinkForUpstream(ctx context.Context, name, rel string, g grant) syscall.Errno {
	n.checkpointChild(name)
	var c ledger.Change
	why := ""
	errno := n.withDir(func(dirfd int) error {
		if c, why = n.root.upstreamRemoved(dirfd, name, rel, n.childNode(name), g); why != "" {
			return nil
		}
		err := n.root.asCaller(ctx, func() error { return unix.Unlinkat(dirfd, name, 0) })
		if err != nil {
			// Nothing was removed: nothing to put back.
			if _, ok := n.root.upstreamRemovals.take(rel); ok {
				n.root.upstreamRemovals.busy.Done()
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
