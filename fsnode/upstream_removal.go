package fsnode

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// git checks a file out by removing it and creating it anew. Outside the
// scope, a removal toward the upstream's other content there is let
// through only as the first half of that pair: a copy of the removed file
// is made first, unnamed, and linked back in its place unless git's
// verified creation (upstreamFile) follows before the git process ends,
// or within upstreamRemovalFor.
//
// Holes an attack found, and what closes them:
//   - put back by path, a removal was lost when the agent removed or
//     renamed its (in-scope) directory: no directory above a pending
//     removal or creation may be removed or renamed (dirs, pendingUnder);
//   - put back as a new file, a removal was lost when the agent had used
//     up the filesystem's inodes: the copy is made before the removal
//     (which frees the original's inode), and linking it in needs none;
//   - one git process removing the file again as soon as it was put back
//     kept it missing: each removal is put back after upstreamRemovalFor
//     even if git lives on, a git process that left a removal incomplete
//     may remove nothing more outside the scope, and a path put back
//     cannot be removed toward the upstream again for upstreamCooldown.

const (
	// maxUpstreamRemovals bounds the removals waiting for their creation
	// (each holds its copy open), the paths in their cooldown, and the git
	// processes barred; past it, such removals are refused, never
	// forgotten. git completes each removal before the next.
	maxUpstreamRemovals = 1024
	// maxHeldBytes bounds the copy a removal keeps: a larger file is not
	// removed outside the scope.
	maxHeldBytes = 64 << 20
	// upstreamRemovalFor is how long a removal waits for its creation:
	// git creates the file right after it removes it.
	upstreamRemovalFor = 10 * time.Second
	// upstreamCooldown is how long a path whose removal was put back
	// cannot be removed toward the upstream again.
	upstreamCooldown = time.Minute
	// upstreamSinkFor is how long git may keep a file it creates from
	// the upstream open: past it, the file is refused at close, and the
	// directories above it are no longer kept from moving.
	upstreamSinkFor = 10 * time.Second
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
	at       time.Time
	g        grant
	// held is a descriptor of the unnamed copy that is put back.
	held int
}

// upstreamRemovals are the removals waiting for their creation, by path,
// the git processes watched for them, and the files being created.
type upstreamRemovals struct {
	// dirs is held for writing by a removal or rename of a directory,
	// and for reading while a removal or creation is noted or published:
	// no directory above one moves meanwhile.
	dirs sync.RWMutex

	mu       sync.Mutex
	m        map[string]upstreamRemoval
	watched  map[uint32]bool      // pids with a watcher
	cooldown map[string]time.Time // path → until when it may not be removed again
	barred   map[uint32]time.Time // git processes that left a removal incomplete
	sinks    map[*upstreamFile]bool
	// busy counts put-backs in progress, which Close waits for.
	busy sync.WaitGroup
}

// put notes a removal at rel by pid and reports whether the watcher of
// pid must be started; ok is false when there is no room or rel is in its
// cooldown.
func (u *upstreamRemovals) put(rel string, pid uint32, rm upstreamRemoval) (start bool, why string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m, u.watched, u.cooldown = map[string]upstreamRemoval{}, map[uint32]bool{}, map[string]time.Time{}
	}
	if why := u.barredLocked(pid); why != "" {
		return false, why
	}
	if until, ok := u.cooldown[rel]; ok {
		if time.Now().Before(until) {
			return false, "git removed it recently without writing it again; it stays until " + until.Format(time.TimeOnly)
		}
		delete(u.cooldown, rel)
	}
	if _, dup := u.m[rel]; !dup && len(u.m) >= maxUpstreamRemovals {
		return false, "too many removals are waiting for git to write their files again"
	}
	if trim(u.cooldown, time.Now()); len(u.cooldown) >= maxUpstreamRemovals {
		// Entries still in their cooldown would have to go: refuse
		// rather than forget one.
		return false, "too many files were put back in the last minute"
	}
	u.m[rel] = rm
	start = !u.watched[pid]
	u.watched[pid] = true
	return start, ""
}

// take returns and forgets the removal at rel; the caller completes it
// (completeRemoval) or puts it back (putBackRemoval).
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

// due takes pid's removals that waited upstreamRemovalFor, or all of them
// if the process ended (or all is set: every pid's); done says that pid
// has none left, and its watch ends.
func (u *upstreamRemovals) due(pid uint32, ended, all bool, now time.Time) (out map[string]upstreamRemoval, done bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	out = map[string]upstreamRemoval{}
	left := 0
	for rel, rm := range u.m {
		if !all && (rm.g.proc == nil || rm.g.proc.Pid != pid) {
			continue
		}
		if all || ended || now.Sub(rm.at) >= upstreamRemovalFor {
			out[rel] = rm
			delete(u.m, rel)
			u.busy.Add(1)
			continue
		}
		left++
	}
	if all {
		clear(u.watched)
		return out, true
	}
	if left == 0 {
		delete(u.watched, pid)
	}
	return out, left == 0
}

// barredWhy says why the git process pid may remove nothing outside the
// scope ("" if it may).
func (u *upstreamRemovals) barredWhy(pid uint32) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.barredLocked(pid)
}

func (u *upstreamRemovals) barredLocked(pid uint32) string {
	if _, ok := u.barred[pid]; ok {
		return "this git process removed a file outside the scope before and did not write it again"
	}
	return ""
}

// cool starts rel's cooldown, and bars the git process pid that left its
// removal incomplete. Past the bound, entries from before the cooldown
// go; if none has, the oldest do (a barred process is one a git command
// line ran: the bar matters while it lives).
func (u *upstreamRemovals) cool(rel string, pid uint32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cooldown == nil {
		u.cooldown = map[string]time.Time{}
	}
	if u.barred == nil {
		u.barred = map[uint32]time.Time{}
	}
	now := time.Now()
	trimOldest(u.cooldown, now)
	trimOldest(u.barred, now.Add(-upstreamCooldown))
	u.cooldown[rel] = now.Add(upstreamCooldown)
	u.barred[pid] = now
}

// trim drops, when m is at maxUpstreamRemovals, its entries not after
// before.
func trim[K comparable](m map[K]time.Time, before time.Time) {
	if len(m) < maxUpstreamRemovals {
		return
	}
	for k, t := range m {
		if !t.After(before) {
			delete(m, k)
		}
	}
}

// trimOldest is trim, then the oldest entries go until there is room: a
// cooldown evicted so is of a path that put() refuses anyway while the
// map is full.
func trimOldest[K comparable](m map[K]time.Time, before time.Time) {
	trim(m, before)
	for len(m) >= maxUpstreamRemovals {
		var oldest K
		var at time.Time
		first := true
		for k, t := range m {
			if first || t.Before(at) {
				oldest, at, first = k, t, false
			}
		}
		delete(m, oldest)
	}
}

// addSink keeps a file being created from the upstream, unless another
// is being created at its path, or too many are.
func (u *upstreamRemovals) addSink(f *upstreamFile) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sinks == nil {
		u.sinks = map[*upstreamFile]bool{}
	}
	if len(u.sinks) >= maxUpstreamRemovals {
		return "too many files are being created from the upstream"
	}
	for o := range u.sinks {
		if o.rel == f.rel && time.Since(o.created) < upstreamSinkFor {
			return "git is creating it already"
		}
	}
	u.sinks[f] = true
	return ""
}

func (u *upstreamRemovals) dropSink(f *upstreamFile) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.sinks, f)
}

// pendingUnder names a removal waiting for its creation, or a file being
// created from the upstream, below directory rel ("" if none).
func (u *upstreamRemovals) pendingUnder(rel string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	below := func(p string) bool { return rel == "" || strings.HasPrefix(p, rel+"/") }
	for p := range u.m {
		if below(p) {
			return p
		}
	}
	for f := range u.sinks {
		// A file kept open past upstreamSinkFor is refused at close,
		// and busies nothing.
		if below(f.rel) && time.Since(f.created) < upstreamSinkFor {
			return f.rel
		}
	}
	return ""
}

// dirMayMove says, for a removal or rename of directories rels, whether
// a removal or creation below one of them waits (EBUSY), and takes u.dirs
// for writing until release is called.
func (r *Root) dirMayMove(rels ...string) (release func(), errno syscall.Errno) {
	u := &r.upstreamRemovals
	u.dirs.Lock()
	for _, rel := range rels {
		if p := u.pendingUnder(rel); p != "" {
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
	rm := upstreamRemoval{hash: pre.Hash, mode: st.Mode & 0o7777, uid: st.Uid, gid: st.Gid, at: time.Now(), g: g, held: held}
	start, why := r.upstreamRemovals.put(rel, g.proc.Pid, rm)
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
// have waited upstreamRemovalFor, or when the process ends.
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
		rms, done := r.upstreamRemovals.due(pid, ended, false, time.Now())
		why := "git did not write it again within " + upstreamRemovalFor.String()
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
	defer r.upstreamRemovals.busy.Done()
	syscall.Close(rm.held)
}

// putBackRemoval puts back the file removal rm took from rel, unless
// something is there again, and records the denial. The caller took rm
// (take or due), which counted it in busy, and holds dirs for reading
// since before it took it.
func (r *Root) putBackRemoval(rel string, rm upstreamRemoval, why string) {
	defer r.upstreamRemovals.busy.Done()
	defer syscall.Close(rm.held)
	var pid uint32
	if rm.g.proc != nil {
		pid = rm.g.proc.Pid
	}
	r.upstreamRemovals.cool(rel, pid)
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
	rms, _ := r.upstreamRemovals.due(0, true, true, time.Now())
	r.settleRemovals(rms, "the mount ended before git wrote it again")
	r.upstreamRemovals.dirs.RUnlock()
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
			if rm, ok := n.root.upstreamRemovals.take(rel); ok {
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
