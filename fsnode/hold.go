package fsnode

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// HoldRequest is an allowed change put to the approval rules.
type HoldRequest struct {
	// Request is the change, with its caller and intent.
	Request policy.Request
	// Process is the process that asked; Session its agent session, nil
	// outside any.
	Process *ledger.Process
	Session *ledger.Session
	// Size, if set, returns the size of the file a deletion removes.
	Size func() (int64, bool)
	// Observe asks only to report a rule that covers the change, not
	// to hold it: the intent is in observe mode.
	Observe bool
}

// hold is the step after an allowed decision: a change an approval rule
// covers waits here, in the FUSE request, until a human decides (see
// internal/approvals). Exempt changes are never held, and a policy
// without approval rules costs one pointer load. Nothing of the mount is
// locked while it waits; the request's context ends the wait when the
// kernel interrupts the request (the caller got a signal or was killed).
func (r *Root) hold(ctx context.Context, req policy.Request, g grant, size func() (int64, bool)) syscall.Errno {
	if !g.decision.Allow || !g.traced() || !r.gov.Snapshot().HasApprovalRules() {
		return 0
	}
	caller, _ := fuse.FromContext(ctx)
	if caller == nil {
		return 0 // the daemon's own work
	}
	req.Caller = policy.Caller{Pid: caller.Pid, Uid: caller.Uid, Gid: caller.Gid}
	req.Intent = g.intent
	return r.gov.Hold(ctx, HoldRequest{Request: req, Process: g.proc, Session: g.actor.Session, Size: size,
		Observe: r.observesHolds(g.intent)})
}

// childSize returns a probe of the size of the entry name in n, for rules
// on deletions of large files; it reads the entry without following it.
func (n *Node) childSize(name string) func() (int64, bool) {
	return func() (int64, bool) {
		var st syscall.Stat_t
		if errno := n.withChild(name, func(dirfd int, name string) error { return fstatat(dirfd, name, &st) }); errno != 0 {
			return 0, false
		}
		return st.Size, true
	}
}

// destroys marks req as a change that destroys content (for approval
// rules on deletions) when the file stat describes holds more than keep
// bytes, keep being what survives the change (a truncation's new size;
// 0 when the whole file goes). It returns the probe of how many bytes
// are destroyed, which larger_than is measured on. Without approval rules
// nothing is probed.
func (r *Root) destroys(req *policy.Request, stat func(st *syscall.Stat_t) error, keep int64) func() (int64, bool) {
	if !r.gov.Snapshot().HasApprovalRules() {
		return nil
	}
	var st syscall.Stat_t
	if stat(&st) != nil || st.Size <= keep {
		return nil
	}
	req.Destroys = true
	lost := st.Size - keep
	return func() (int64, bool) { return lost, true }
}

// childStat stats the entry name in n without following it.
func (n *Node) childStat(name string) func(st *syscall.Stat_t) error {
	return func(st *syscall.Stat_t) error {
		return errnoAsError(n.withChild(name, func(dirfd int, name string) error { return fstatat(dirfd, name, st) }))
	}
}

// selfStat stats n: through the handle f if the call came with one,
// else by its name.
func (n *Node) selfStat(f fs.FileHandle) func(st *syscall.Stat_t) error {
	return func(st *syscall.Stat_t) error {
		if lf, ok := f.(*File); ok && lf != nil {
			return syscall.Fstat(lf.fd, st)
		}
		return errnoAsError(n.withParent(func(dirfd int, name string) error { return fstatat(dirfd, name, st) }))
	}
}

// replaces marks req, a rename onto an existing entry whose stat is st,
// as destroying that entry (for approval rules on deletions), and returns
// the probe of its size.
func (r *Root) replaces(req *policy.Request, st *syscall.Stat_t) func() (int64, bool) {
	if !r.gov.Snapshot().HasApprovalRules() {
		return nil
	}
	req.Destroys = true
	size := st.Size
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		size = 0 // an empty directory: what it listed is kept elsewhere
	}
	return func() (int64, bool) { return size, true }
}
