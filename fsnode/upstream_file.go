package fsnode

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/upstreamplan"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// upstreamFile is a file git creates outside the scope toward the
// upstream's content (see upstreamplan). Its bytes go to an unnamed file
// in the same directory, never to the path: when git closes it (FLUSH,
// before close returns), the mount copies them into a second unnamed file
// only it holds, checks that copy against the upstream's tip, and links
// that copy at the path. So no byte the caller wrote is ever visible there
// unchecked, and nothing written after the check reaches it.
type upstreamFile struct {
	*File
	dir       *Node // the directory it is created in
	name, rel string
	g         grant
	created   time.Time

	mu      sync.Mutex
	settled bool
	result  syscall.Errno
}

// createUpstream is createFile for a file git brings from the upstream
// outside the scope.
func (n *Node) createUpstream(ctx context.Context, name, rel string, g grant, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	e := g.upstream.Entry
	if exec := mode&0o100 != 0; exec != e.Executable() {
		return nil, nil, 0, n.root.denyUpstream(ctx, g, policy.OpCreate, rel,
			fmt.Sprintf("git would create %s with mode %o, the upstream's tip has mode %s", rel, mode&0o7777, e.Mode))
	}
	fd := -1
	var st syscall.Stat_t
	errno := n.withChild(name, func(dirfd int, name string) error {
		var cur syscall.Stat_t
		if err := fstatat(dirfd, name, &cur); err == nil {
			return syscall.EEXIST
		} else if err != syscall.ENOENT {
			return err
		}
		// CREATE runs as the caller (CallerScope): the unnamed file is
		// theirs, in a directory they may write.
		var err error
		if fd, err = unix.Openat(dirfd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, mode&0o777); err != nil {
			return err
		}
		return syscall.Fstat(fd, &st)
	})
	if errno == syscall.EEXIST {
		return nil, nil, 0, n.root.denyUpstream(ctx, g, policy.OpCreate, rel,
			rel+" exists: outside the scope, git may create a file the upstream has, not write over one")
	}
	if errno != 0 {
		if fd >= 0 {
			syscall.Close(fd)
		}
		return nil, nil, 0, errno
	}
	child := n.newChild(ctx, &st, out)
	cn := child.Operations().(*Node)
	f := &upstreamFile{File: newFile(cn, fd, nil), dir: n, name: name, rel: rel, g: g, created: time.Now()}
	if why := n.root.upstreamRemovals.AddSink(f, f.rel, f.created); why != "" {
		f.File.Release(ctx)
		return nil, nil, 0, n.root.denyUpstream(ctx, g, policy.OpCreate, rel, why)
	}
	cn.sink.Store(f)
	// The check runs at close (FLUSH), before close returns.
	return child, f, openFlags &^ fuse.FOPEN_NOFLUSH, 0
}

// Flush checks and publishes the file the first time it is closed; every
// later close returns the same result.
func (f *upstreamFile) Flush(ctx context.Context) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.settled {
		f.settled = true
		f.result = f.publish(ctx)
		f.node.sink.CompareAndSwap(f, nil)
		f.node.root.upstreamRemovals.DropSink(f)
	}
	return f.result
}

// Release forgets the handle; a file never closed is never published.
func (f *upstreamFile) Release(ctx context.Context) syscall.Errno {
	f.node.sink.CompareAndSwap(f, nil)
	f.node.root.upstreamRemovals.DropSink(f)
	return f.File.Release(ctx)
}

// publish checks what the caller wrote against the upstream and links the
// mount's own copy of it at the path; EACCES, recorded, if it is not the
// upstream's content.
func (f *upstreamFile) publish(ctx context.Context) syscall.Errno {
	r := f.node.root
	dir, _ := splitRel(f.rel)
	if time.Since(f.created) >= upstreamplan.SinkFor {
		return f.refuseLocking(ctx, fmt.Sprintf("git kept it open more than %v", upstreamplan.SinkFor))
	}
	// The tip now, not the one of the creation: the upstream may have
	// moved on (or the policy named another) while the file was open.
	// Asked before dirs is taken: it may wait for a fetch.
	e, why := f.tipNow(ctx)
	if why != "" {
		return f.refuseLocking(ctx, why)
	}
	// No directory above the path moves while it is published (see
	// upstreamRemovals.dirs), and it is still where git created it: what
	// is checked and recorded is the path the file goes to.
	r.upstreamRemovals.dirs.RLock()
	defer r.upstreamRemovals.dirs.RUnlock()
	if d, ok := f.dir.relPath(); !ok || joinRel(d, f.name) != f.rel {
		return f.refuse(ctx, "its directory was moved or removed while git wrote it")
	}
	var copyFd = -1
	defer func() {
		if copyFd >= 0 {
			syscall.Close(copyFd)
		}
	}()
	var d objects.Digest
	errno := f.dir.withDir(func(dirfd int) error {
		// The copy is the caller's file, made as the caller.
		if err := r.asCaller(ctx, func() error {
			var err error
			copyFd, err = unix.Openat(dirfd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
			return err
		}); err != nil {
			return err
		}
		var sinkSt syscall.Stat_t
		if err := syscall.Fstat(f.fd, &sinkSt); err != nil {
			return err
		}
		if err := r.asDaemon(ctx, func() error {
			n, err := copyFile(copyFd, f.fd, e.Size+1)
			if err != nil {
				return err
			}
			if n != e.Size {
				why = fmt.Sprintf("git wrote %d bytes, the upstream's version has %d", n, e.Size)
				return nil
			}
			if d, err = r.hashes.HashFd(copyFd); err != nil {
				return err
			}
			if d.Hash != e.SHA256 {
				why = "what git wrote (" + d.Hash + ") is not the upstream's version (" + e.SHA256 + ")"
			}
			return nil
		}); err != nil || why != "" {
			return err
		}
		// git's own modes, whatever the caller's umask: a file of the
		// upstream is readable by all, writable by its owner only.
		perm := uint32(0o644)
		if e.Executable() {
			perm = 0o755
		}
		if err := syscall.Fchmod(copyFd, perm); err != nil {
			return err
		}
		if err := r.gov.LedgerErr(); err != nil {
			why = "the ledger cannot record changes now (" + err.Error() + ")"
			return nil
		}
		return r.asCaller(ctx, func() error {
			return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", copyFd), dirfd, f.name, unix.AT_SYMLINK_FOLLOW)
		})
	})
	if errno != 0 && why == "" {
		why = "it could not be published: " + errno.Error()
	}
	if why != "" {
		return f.refuse(ctx, why)
	}
	if rm, ok := r.upstreamRemovals.Take(f.rel); ok {
		// The removal was recorded; this creation completes it.
		r.completeRemoval(rm)
	}
	g := f.g
	g.upstream = &upstreamplan.Plan{Entry: e}
	r.record(g, ledger.Change{Event: ledger.EventCreate, Path: f.rel, PostHash: d.Hash, Lines: d.Lines, Op: "upstream",
		RestoredFrom: g.upstream.RestoredFrom(), Reason: "git brought " + e.Ref + " at " + upstreamplan.ShortCommit(e.Commit) + " outside the scope",
		Time: time.Now()})
	// The kernel knows the unnamed file under the name: it learns the
	// published one.
	r.forgetEntry(dir, f.name)
	return 0
}

// tipNow is what the upstream's tip has at the file's path now, if it is
// a file git could have created with the handle's mode; else why not.
func (f *upstreamFile) tipNow(ctx context.Context) (upstreamplan.Entry, string) {
	src, ok := f.node.root.gov.(upstreamplan.Source)
	if !ok {
		return upstreamplan.Entry{}, "the upstream cannot be consulted"
	}
	e, err := src.UpstreamEntry(ctx, f.rel)
	if err != nil {
		return upstreamplan.Entry{}, err.Error()
	}
	if !e.RegularFile() {
		return upstreamplan.Entry{}, "the upstream's tip (" + upstreamplan.ShortCommit(e.Commit) + ") no longer has a regular file there"
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return upstreamplan.Entry{}, err.Error()
	}
	if exec := st.Mode&0o100 != 0; exec != e.Executable() {
		return upstreamplan.Entry{}, fmt.Sprintf("git created it with mode %o, the upstream's tip (%s) has mode %s", st.Mode&0o7777, upstreamplan.ShortCommit(e.Commit), e.Mode)
	}
	return e, ""
}

// refuseLocking is refuse with dirs not yet held.
func (f *upstreamFile) refuseLocking(ctx context.Context, why string) syscall.Errno {
	f.node.root.upstreamRemovals.dirs.RLock()
	defer f.node.root.upstreamRemovals.dirs.RUnlock()
	return f.refuse(ctx, why)
}

// refuse records the refusal of the file, puts back what git removed at
// its path (the pair failed), and returns EACCES. dirs is held.
func (f *upstreamFile) refuse(ctx context.Context, why string) syscall.Errno {
	r := f.node.root
	if rm, ok := r.upstreamRemovals.Take(f.rel); ok {
		r.putBackRemoval(f.rel, rm, "what git wrote in its place was refused")
	}
	return r.denyUpstream(ctx, f.g, policy.OpCreate, f.rel, why)
}

// copyFile copies at most limit bytes of the file at src (from its start)
// to dst, through a descriptor of its own, and returns how many it copied.
func copyFile(dst, src int, limit int64) (int64, error) {
	rfd, err := reopenReadOnly(src)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(rfd)
	buf := make([]byte, 128<<10)
	var off int64
	for off < limit {
		n, err := syscall.Pread(rfd, buf[:min(int64(len(buf)), limit-off)], off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return off, err
		}
		if n == 0 {
			break
		}
		for w := 0; w < n; {
			m, err := syscall.Pwrite(dst, buf[w:n], off+int64(w))
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return off, err
			}
			w += m
		}
		off += int64(n)
	}
	return off, nil
}

// denyUpstream records the refusal of git's change outside the scope and
// returns EACCES.
func (r *Root) denyUpstream(ctx context.Context, g grant, op policy.Op, rel, why string) syscall.Errno {
	_ = r.asDaemon(ctx, func() error { r.recordUpstreamDenial(g, op, rel, why); return nil })
	return syscall.EACCES
}

// recordUpstreamDenial records the refusal (as the daemon).
func (r *Root) recordUpstreamDenial(g grant, op policy.Op, rel, why string) {
	var caller policy.Caller
	if p := g.proc; p != nil {
		caller = policy.Caller{Pid: p.Pid, Uid: p.Uid, Gid: p.Gid}
	}
	r.gov.Denied(policy.Request{Op: op, Path: rel, Intent: g.intent, Caller: caller},
		policy.Decision{Code: upstreamplan.CodeUnverified, Validation: policy.ValidationFail, Path: rel, Reason: why}, g.proc, g.actor.Session)
}
