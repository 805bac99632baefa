package fsnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// mayBeProvisional reports whether req, which the scope refused with d,
// is allowed as work on a provisional file: the creation of a new file
// beside a name the intent owns, a change to a provisional file (writing,
// truncating, its mode or times, unlinking it), or the move of a file of
// the scope to a new name beside it (an editor's backup, file~), which
// makes that name provisional. If not, why may say what else refused it.
func (r *Root) mayBeProvisional(req policy.Request, d policy.Decision, snap *policy.Snapshot, a Actor) (bool, string) {
	if d.Code != policy.CodeOutOfScope {
		return false, ""
	}
	var st syscall.Stat_t
	switch req.Op {
	case policy.OpCreate:
		err := r.statBeneathSys(req.Path, &st)
		if err == nil {
			// O_CREAT on an existing name: an open of the provisional
			// file, or nothing this allows.
			return r.prov.holdsStat(req.Path, &st), ""
		}
		if !errors.Is(err, syscall.ENOENT) || !snap.Provisional(req, d) {
			return false, ""
		}
		return r.roomFor(a, req.Caller)
	case policy.OpOpenWrite, policy.OpTruncate, policy.OpChmod, policy.OpChown, policy.OpUtimes, policy.OpUnlink,
		policy.OpSetxattr, policy.OpRemovexattr:
		// Which attributes a provisional file may carry is changeXattr's.
		return !req.IsDir && r.statBeneathSys(req.Path, &st) == nil && r.prov.holdsStat(req.Path, &st), ""
	case policy.OpRename:
		// A file of the scope moved to a new name beside it that the scope
		// refuses: its removal is decided on its own (renameToProvisional).
		if req.IsDir || req.IsDir2 || req.RenameFlags&policy.RenameExchange != 0 || d.Path != req.Path2 ||
			path.Dir(req.Path) != path.Dir(req.Path2) {
			return false, ""
		}
		if err := r.statBeneathSys(req.Path2, &st); !errors.Is(err, syscall.ENOENT) {
			return false, ""
		}
		create := policy.Request{Op: policy.OpCreate, Path: req.Path2, Intent: req.Intent, Caller: req.Caller}
		if !snap.Provisional(create, d) {
			return false, ""
		}
		return r.roomFor(a, req.Caller)
	}
	return false, ""
}

// roomFor reports whether a's share of provisional files has room.
func (r *Root) roomFor(a Actor, c policy.Caller) (bool, string) {
	if r.prov.hasRoom(ownerOf(a, c)) {
		return true, ""
	}
	return false, fmt.Sprintf("and the %d temporary files beside owned names that one session (or uid) may keep are in use", r.prov.maxPerOwner)
}

// statBeneathSys is statBeneath into a syscall.Stat_t.
func (r *Root) statBeneathSys(rel string, st *syscall.Stat_t) error {
	fd, err := r.openBeneath(rel, unix.O_PATH, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	return syscall.Fstat(fd, st)
}

// provisionalXattr reports whether a provisional file's extended
// attribute attr may be set or removed: its access ACL, which tools copy
// from the file they save (sed -i, vim) and which stands for mode bits,
// recorded with the save. Any other attribute would reach the scope
// unrecorded when the file is renamed there.
func provisionalXattr(attr string) bool { return attr == "system.posix_acl_access" }

// refuseProvisional records the refusal g carries of a change that was
// allowed only as work on a provisional file and turned out not to be.
func (r *Root) refuseProvisional(ctx context.Context, g grant, req policy.Request) syscall.Errno {
	if c, ok := fuse.FromContext(ctx); ok && c != nil {
		req.Caller = policy.Caller{Pid: c.Pid, Uid: c.Uid, Gid: c.Gid}
	}
	req.Intent = g.intent
	_ = r.asDaemon(ctx, func() error {
		r.gov.Denied(req, g.decision, g.proc, g.actor.Session)
		return nil
	})
	return syscall.EACCES
}

// createProvisional is createFile of a name the scope refuses, allowed as
// a provisional file (g.provisional): a new file becomes one; an existing
// name opens only if it is one.
func (n *Node) createProvisional(ctx context.Context, name, rel string, g grant, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	fd := -1
	created, refused := false, false
	var st syscall.Stat_t
	errno := n.withChild(name, func(dirfd int, name string) error {
		var err error
		fd, err = unix.Openat(dirfd, name, cleanOpenFlags(flags)|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
		if err == nil {
			created = true
			return syscall.Fstat(fd, &st)
		}
		if err != syscall.EEXIST || flags&syscall.O_EXCL != 0 {
			return err
		}
		// Checked before the open, which may truncate, and after it,
		// which is the file the handle has.
		if err := fstatat(dirfd, name, &st); err != nil {
			return err
		}
		if !n.root.prov.holdsStat(rel, &st) {
			refused = true
			return nil
		}
		if fd, err = unix.Openat(dirfd, name, cleanOpenFlags(flags)|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0); err != nil {
			return err
		}
		if err := syscall.Fstat(fd, &st); err != nil {
			return err
		}
		refused = !n.root.prov.holdsStat(rel, &st)
		return nil
	})
	if errno == 0 && refused {
		errno = n.root.refuseProvisional(ctx, g, policy.Request{Op: policy.OpCreate, Path: rel})
	}
	if errno != 0 {
		if fd >= 0 {
			syscall.Close(fd)
		}
		return nil, nil, 0, errno
	}
	child := n.newChild(ctx, &st, out)
	childNode := child.Operations().(*Node)
	if created {
		caller, _ := fuse.FromContext(ctx)
		var c policy.Caller
		if caller != nil {
			c = policy.Caller{Pid: caller.Pid, Uid: caller.Uid, Gid: caller.Gid}
		}
		p := &provisionalFile{rel: rel, node: childNode, owner: ownerOf(g.actor, c), g: g, created: time.Now()}
		if n.root.prov.add(p, &st) {
			go n.root.sweepProvisional()
		}
	}
	return child, newExemptWriter(ctx, childNode, fd), openFlags, 0
}

// openProvisional is openFile for writing of a provisional file.
func (n *Node) openProvisional(ctx context.Context, rel string, g grant, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fd, err := n.root.openBeneath(rel, cleanOpenFlags(flags), 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || !n.root.prov.holdsStat(rel, &st) {
		syscall.Close(fd)
		return nil, 0, n.root.refuseProvisional(ctx, g, policy.Request{Op: policy.OpOpenWrite, Path: rel})
	}
	return newExemptWriter(ctx, n, fd), openFlags, 0
}

// renameProvisional is Rename of the provisional file name: decided as a
// write of its new name, which is the only way it stays; recorded as the
// change of that name.
func (n *Node) renameProvisional(ctx context.Context, name string, dst *Node, newName, rel, newRel string, flags uint32, srcSt *syscall.Stat_t, dstExists bool) syscall.Errno {
	op := policy.OpCreate
	if dstExists {
		op = policy.OpOpenWrite
	}
	req := policy.Request{Op: op, Path: newRel}
	if flags&policy.RenameExchange != 0 {
		// The other file would take the temporary's place: it is never
		// provisional, so the exchange is refused.
		return n.root.refuseProvisional(ctx, grant{decision: policy.Decision{Code: policy.CodeOutOfScope, Validation: policy.ValidationFail, Path: rel,
			Reason: fmt.Sprintf("%s is a temporary file outside the scope; it may only be renamed onto a name of the scope, not exchanged with one", textsafe.Escape(rel))}},
			policy.Request{Op: policy.OpRename, Path: rel, Path2: newRel, RenameFlags: flags})
	}
	g, errno := n.root.authorizeAs(ctx, req, nil, false)
	if errno != 0 {
		return errno
	}
	if !g.traced() || g.upstream != nil {
		// An exempt name (git's state, an .intentignore'd path) is not
		// the scope's: a temporary made beside a name of the scope does
		// not go there. Nor does it become content git brings from the
		// upstream, which is judged as git writes it, not at a rename.
		g.decision = policy.Decision{Code: policy.CodeOutOfScope, Validation: policy.ValidationFail, Path: newRel,
			Reason: fmt.Sprintf("%s is a temporary file outside the scope; it may only be renamed onto a governed name of the scope, and %s is not one (exempt from governance, or content only the upstream may bring)", textsafe.Escape(rel), textsafe.Escape(newRel))}
		return n.root.refuseProvisional(ctx, g, policy.Request{Op: policy.OpRename, Path: rel, Path2: newRel})
	}
	movedNode := n.childNode(name)
	var pre objects.Digest
	var kept string
	var cc contentChange
	var ccErr error
	// mode is what the temporary's mode and ACL made of the name's.
	var mode string
	errno = withChildren(n, name, dst, newName, func(srcDir int, name string, dstDir int, newName string) error {
		if dstExists {
			pre, kept = n.root.preImageBeforeRemoval(dstDir, newName)
		}
		if err := n.root.asCaller(ctx, func() error { return unix.Renameat2(srcDir, name, dstDir, newName, uint(flags)) }); err != nil {
			return err
		}
		n.root.prov.drop(rel, uint64(srcSt.Dev), srcSt.Ino)
		ccErr = n.root.asDaemon(ctx, func() error {
			fd, err := openatForHash(dstDir, newName)
			if err != nil {
				return err
			}
			defer syscall.Close(fd)
			var st syscall.Stat_t
			if err := syscall.Fstat(fd, &st); err != nil {
				return err
			}
			mode = fmt.Sprintf("%04o", st.Mode&0o7777)
			cc, err = n.root.analyze(newRel, pre.Hash, fd)
			return err
		})
		return nil
	})
	if errno != 0 {
		return errno
	}
	c := ledger.Change{Event: ledger.EventCreate, Path: newRel, PreHash: pre.Hash, PostHash: cc.digest.Hash, Lines: cc.digest.Lines,
		PreImage: kept, Ranges: cc.ranges, Class: cc.class, Attribute: cc.attribute, Op: "rename", Time: time.Now(), Mode: mode,
		Reason: "saved through " + textsafe.Escape(rel) + ", a temporary file beside it"}
	if pre.Hash != "" {
		c.Event = ledger.EventWrite
	}
	if ccErr != nil {
		n.root.log.Error("content hash failed", "path", newRel, "err", ccErr)
		c.Reason = joinReason(c.Reason, "content hash failed: "+ccErr.Error())
	}
	n.root.record(g, c)
	g.actor.sawAt(n.root, newRel)
	if movedNode != nil {
		// A handle still open on the temporary now writes a name of the
		// scope: from here on it is tracked.
		n.root.retrack(movedNode, newRel)
	}
	return 0
}

// renameToProvisional is Rename of rel, a file the scope lets the caller
// remove, to newRel, a new name beside it the scope refuses (g, allowed
// as provisional): an editor's backup. It is recorded as the removal of
// rel, and newRel is provisional from then on.
func (n *Node) renameToProvisional(ctx context.Context, g grant, name, newName, rel, newRel string, flags uint32) syscall.Errno {
	req := policy.Request{Op: policy.OpRename, Path: rel, Path2: newRel, RenameFlags: flags}
	var size func() (int64, bool)
	if n.root.gov.Snapshot().HasApprovalRules() {
		size = n.childSize(name)
	}
	gd, errno := n.root.authorizeAs(ctx, policy.Request{Op: policy.OpUnlink, Path: rel}, size, false)
	if errno != 0 {
		return errno
	}
	if gd.upstream != nil {
		// A removal git makes for the upstream is not a move.
		return n.root.refuseProvisional(ctx, g, req)
	}
	n.checkpointChild(name)
	movedNode := n.childNode(name)
	if movedNode != nil {
		movedNode.writeMu.Lock()
		busy := movedNode.hasTracked()
		movedNode.writeMu.Unlock()
		if busy {
			// Its writers would write a file outside the scope.
			g.decision.Reason = joinReason(g.decision.Reason, "and "+textsafe.Escape(rel)+" is open for writing")
			return n.root.refuseProvisional(ctx, g, req)
		}
	}
	var pre objects.Digest
	var kept string
	var st syscall.Stat_t
	refused := false
	errno = n.withChild(name, func(dirfd int, name string) error {
		if err := fstatat(dirfd, name, &st); err != nil {
			return err
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 1 {
			// A file with other names would stay writable through the
			// provisional one.
			refused = true
			return nil
		}
		if gd.traced() {
			pre, kept = n.root.preImageBeforeRemoval(dirfd, name)
		}
		if err := n.root.asCaller(ctx, func() error {
			return unix.Renameat2(dirfd, name, dirfd, newName, uint(flags|policy.RenameNoReplace))
		}); err != nil {
			return err
		}
		return fstatat(dirfd, newName, &st)
	})
	if errno == 0 && refused {
		errno = n.root.refuseProvisional(ctx, g, req)
	}
	if errno != 0 {
		return errno
	}
	n.root.record(gd, ledger.Change{Event: ledger.EventDelete, Path: rel, PreHash: pre.Hash, PreImage: kept, Op: "rename", Time: time.Now(),
		Reason: fmt.Sprintf("renamed to %s, outside the scope, where it is a temporary file until it is renamed back or removed", textsafe.Escape(newRel))})
	if gd.actor.Versions != nil {
		gd.actor.Versions.Forget(rel)
	}
	p := &provisionalFile{rel: newRel, node: movedNode, owner: ownerOf(g.actor, callerOf(ctx)), g: g, created: time.Now()}
	if n.root.prov.add(p, &st) {
		go n.root.sweepProvisional()
	}
	return 0
}

// callerOf is the policy's caller of the request in ctx.
func callerOf(ctx context.Context) policy.Caller {
	if c, ok := fuse.FromContext(ctx); ok && c != nil {
		return policy.Caller{Pid: c.Pid, Uid: c.Uid, Gid: c.Gid}
	}
	return policy.Caller{}
}

// maxFdsScanned bounds the descriptors of a process meantTarget reads.
const maxFdsScanned = 4096

// meantTarget names the file a refused creation of rel was about: the one
// regular file of rel's directory that process pid has open through the
// mount (sed -i holds the file it edits open while it creates its
// temporary beside it). "" when there is none, or more than one.
func (r *Root) meantTarget(pid uint32, rel string) string {
	if pid == 0 {
		return ""
	}
	dir := path.Dir(rel)
	if dir == "." {
		dir = ""
	}
	fdDir := "/proc/" + strconv.FormatUint(uint64(pid), 10) + "/fd"
	f, err := os.Open(fdDir)
	if err != nil {
		return ""
	}
	names, _ := f.Readdirnames(maxFdsScanned)
	f.Close()
	found := ""
	for _, fdName := range names {
		target, err := os.Readlink(fdDir + "/" + fdName)
		if err != nil || !strings.HasPrefix(target, "/") {
			continue
		}
		tdir, base := path.Split(target)
		tdir = strings.TrimSuffix(tdir, "/")
		if base == "" || (dir != "" && !strings.HasSuffix(tdir, "/"+dir)) {
			continue
		}
		cand := joinRel(dir, base)
		if cand == rel || cand == found {
			continue
		}
		var st syscall.Stat_t
		if r.statBeneathSys(cand, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			continue
		}
		// The descriptor must be that very file, seen through the mount:
		// its inode number there is the mount's for the source file.
		if fdInode(pid, fdName) != r.idFromStat(&st).Ino {
			continue
		}
		if found != "" {
			return "" // two files: no telling which was meant
		}
		found = cand
	}
	return found
}

// fdInode reads the inode number of descriptor fd of pid from fdinfo; 0
// when it cannot.
func fdInode(pid uint32, fd string) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/fdinfo/" + fd)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "ino:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return 0
}

// nameMeantTarget rewrites the refusal d of the creation req.Path so it
// names the file the tool meant to change, if the caller has exactly one
// open beside it.
func (r *Root) nameMeantTarget(req *policy.Request, d *policy.Decision) {
	if req.Op != policy.OpCreate || d.Code != policy.CodeOutOfScope || d.Path != req.Path {
		return
	}
	target := r.meantTarget(req.Caller.Pid, req.Path)
	if target == "" {
		return
	}
	temp := req.Path
	d.Reason = strings.Replace(d.Reason, temp, target, 1) +
		fmt.Sprintf(" (the refused creation of %s is a temporary file of a save of %s, made beside it to be renamed over it)", textsafe.Escape(temp), textsafe.Escape(target))
	d.Path = target
	req.Path2 = temp
}
