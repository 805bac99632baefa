package fsnode

import (
	"context"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// git's writes outside the scope (see GitRestorer). git checks a file out
// by removing it and creating it anew: the removal is decided at once
// (what it removes must be restorable), the file created is checked when
// it is closed, and undone if git restored nothing. What the removal
// took is remembered here for that undo.

const (
	maxGitRemoved = 4096
	// gitRemovedFor is how long a removal waits for the creation that
	// follows it: git removes and creates a file in one step.
	gitRemovedFor = time.Minute
)

// gitRemoval is a file git removed outside the scope, which it must
// write again.
type gitRemoval struct {
	hash     string
	mode     uint32
	uid, gid uint32
	at       time.Time
	// pid is the git process that removed it: only its creation there
	// takes the removal.
	pid uint32
}

// gitRemovals are the recent removals by git outside the scope, by path.
type gitRemovals struct {
	mu sync.Mutex
	m  map[string]gitRemoval
}

func (g *gitRemovals) put(rel string, r gitRemoval) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]gitRemoval{}
	}
	if len(g.m) >= maxGitRemoved {
		for k, v := range g.m {
			if time.Since(v.at) > gitRemovedFor {
				delete(g.m, k)
			}
		}
		if len(g.m) >= maxGitRemoved {
			clear(g.m)
		}
	}
	g.m[rel] = r
}

// take returns and forgets the recent removal at rel by process pid.
func (g *gitRemovals) take(rel string, pid uint32) (gitRemoval, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.m[rel]
	if !ok || r.pid != pid {
		return gitRemoval{}, false
	}
	delete(g.m, rel)
	return r, time.Since(r.at) <= gitRemovedFor
}

// takeIf is take, if the removal at rel is still the one made at at.
func (g *gitRemovals) takeIf(rel string, at time.Time) (gitRemoval, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.m[rel]
	if !ok || !r.at.Equal(at) {
		return gitRemoval{}, false
	}
	delete(g.m, rel)
	return r, true
}

// peek returns the removal at rel, if any.
func (g *gitRemovals) peek(rel string) (gitRemoval, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.m[rel]
	return r, ok
}

// awaitRewrite watches a removal by git outside the scope that only a
// rewrite of the file justifies (every commit a ref names has the file,
// some with other content): when the git process ends, or after
// gitRemovedFor, a removal that no checked creation took is undone, and
// the denial recorded. So `git read-tree -u` or `git rm` toward a tree no
// ref names cannot remove a file outside the scope.
func (r *Root) awaitRewrite(rel string, g grant) {
	rm, ok := r.gitRemovals.peek(rel)
	if !ok {
		return
	}
	// The request names the calling thread: its own pidfd where the
	// kernel offers one (PIDFD_THREAD, 6.9+), else the process's.
	pidfd := -1
	if g.proc != nil {
		for _, flags := range []int{unix.O_EXCL, 0} {
			if fd, err := unix.PidfdOpen(int(g.proc.Pid), flags); err == nil {
				pidfd = fd
				break
			}
		}
	}
	go func() {
		if pidfd >= 0 {
			fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
			for {
				if _, err := unix.Poll(fds, int(gitRemovedFor/time.Millisecond)); err != unix.EINTR {
					break
				}
			}
			syscall.Close(pidfd)
		} else {
			time.Sleep(gitRemovedFor)
		}
		if r.closed.Load() {
			return // unmounted: the removal stays recorded (and its bytes kept)
		}
		why := "git removed " + rel + " outside the scope toward no commit a ref names (every one has the file) and did not write it again"
		dir, name := splitRel(rel)
		dirfd := r.rootFd
		if dir != "" {
			var err error
			if dirfd, err = openDir(r.rootFd, dir); err != nil {
				dirfd = -1
				why += "; it could not be put back: " + err.Error()
			} else {
				defer syscall.Close(dirfd)
			}
		}
		var st syscall.Stat_t
		if dirfd >= 0 && fstatat(dirfd, name, &st) == nil {
			// git wrote it again: its check (at close) takes the
			// removal, or puts back what it removed.
			return
		}
		if _, ok := r.gitRemovals.takeIf(rel, rm.at); !ok {
			return // checked and taken, or put back
		}
		if dirfd >= 0 {
			if err := r.putBack(dirfd, name, rm); err != nil {
				r.log.Error("putting back what git removed", "path", rel, "err", err)
				why += "; it could not be put back (" + err.Error() + "; its bytes are kept as " + rm.hash + ")"
			} else {
				why += "; the mount put it back"
				r.gov.Record(ledger.Change{Event: ledger.EventRevert, Path: rel, PostHash: rm.hash, Intent: g.intent, Process: g.proc,
					Session: g.actor.Session, Op: "undo", Reason: "put back: git removed it outside the scope and did not write it again", Time: time.Now()})
			}
		}
		var caller policy.Caller
		if p := g.proc; p != nil {
			caller = policy.Caller{Pid: p.Pid, Uid: p.Uid, Gid: p.Gid}
		}
		r.gov.Denied(policy.Request{Op: policy.OpUnlink, Path: rel, Intent: g.intent, Caller: caller},
			policy.Decision{Code: CodeGitRestoreRefused, Validation: policy.ValidationFail, Path: rel, Reason: why}, g.proc, g.actor.Session)
	}()
}

// gitRemoved keeps the bytes of the file git is about to remove at rel
// (in dirfd, as name) outside the scope; and, if git must write it again
// (g.provisional), notes the removal, so that it can be put back.
func (r *Root) gitRemoved(dirfd int, name, rel string, node *Node, g grant) (objects.Digest, string) {
	var st syscall.Stat_t
	if fstatat(dirfd, name, &st) != nil {
		return objects.Digest{}, ""
	}
	pre, kept := r.preImageBeforeRemoval(dirfd, name, node)
	if g.provisional && g.proc != nil && pre.Hash != "" && (kept == preImageStored || kept == preImageEmpty) {
		r.gitRemovals.put(rel, gitRemoval{hash: pre.Hash, mode: st.Mode & 0o7777, uid: st.Uid, gid: st.Gid, at: time.Now(), pid: g.proc.Pid})
	}
	return pre, kept
}

// verifyGitWrite checks the content (digest d) of a file git created
// outside the scope, through handle fd, at rel: it returns where the
// content comes from, or undoes the creation (removes the file and puts
// back what git removed there) and records the denial.
func (f *File) verifyGitWrite(t *tracking, rel string, d objects.Digest, hashErr error) (string, bool) {
	r := t.node.root
	gr, ok := r.gov.(GitRestorer)
	from, why := "", "its content could not be hashed"
	switch {
	case !ok:
		why = "git's restores are not checked by this mount"
	case hashErr == nil:
		from, why = gr.VerifyRestore(context.Background(), rel, d.Hash, t.g.proc)
	}
	if from != "" {
		if t.g.proc != nil {
			r.gitRemovals.take(rel, t.g.proc.Pid)
		}
		return from, true
	}
	why += "; " + r.undoGitCreate(f.fd, rel, t)
	var caller policy.Caller
	if p := t.g.proc; p != nil {
		caller = policy.Caller{Pid: p.Pid, Uid: p.Uid, Gid: p.Gid}
	}
	r.gov.Denied(policy.Request{Op: policy.OpCreate, Path: rel, Intent: t.g.intent, Caller: caller},
		policy.Decision{Code: CodeGitRestoreRefused, Validation: policy.ValidationFail, Path: rel, Reason: why}, t.g.proc, t.g.actor.Session)
	return "", false
}

// undoGitCreate removes the file open at fd from rel, if it is still
// there, and puts back the version git removed there just before. It
// says what it did.
func (r *Root) undoGitCreate(fd int, rel string, t *tracking) string {
	dir, name := splitRel(rel)
	dirfd := r.rootFd
	if dir != "" {
		var err error
		if dirfd, err = openDir(r.rootFd, dir); err != nil {
			r.log.Error("undoing git's write outside the scope", "path", rel, "err", err)
			return "it could not be removed: " + err.Error()
		}
		defer syscall.Close(dirfd)
	}
	var mine, there syscall.Stat_t
	if syscall.Fstat(fd, &mine) != nil || fstatat(dirfd, name, &there) != nil || mine.Dev != there.Dev || mine.Ino != there.Ino {
		return "the file is no longer there"
	}
	if err := unix.Unlinkat(dirfd, name, 0); err != nil {
		r.log.Error("undoing git's write outside the scope", "path", rel, "err", err)
		return "it could not be removed: " + err.Error()
	}
	var rm gitRemoval
	ok := false
	if t.g.proc != nil {
		rm, ok = r.gitRemovals.take(rel, t.g.proc.Pid)
	}
	if !ok {
		return "the mount removed it"
	}
	if err := r.putBack(dirfd, name, rm); err != nil {
		r.log.Error("putting back what git removed", "path", rel, "err", err)
		return "the mount removed it, but could not put back the version git removed (" + err.Error() + "; its bytes are kept as " + rm.hash + ")"
	}
	r.gov.Record(ledger.Change{Event: ledger.EventRevert, Path: rel, PostHash: rm.hash, Intent: t.g.intent, Process: t.g.proc,
		Session: t.g.actor.Session, Op: "undo", Reason: "put back: git removed it outside the scope, then wrote content that restores nothing",
		Time: time.Now()})
	return "the mount removed it and put back the version git removed"
}

// putBack recreates the file rm describes as name in dirfd, from the
// object store, whole or not at all: it is written unnamed and linked in
// place, unless something is there by then.
func (r *Root) putBack(dirfd int, name string, rm gitRemoval) error {
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
