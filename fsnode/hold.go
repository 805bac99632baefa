package fsnode

import (
	"context"
	"syscall"

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
		if errno := n.withDir(func(dirfd int) error { return fstatat(dirfd, name, &st) }); errno != 0 {
			return 0, false
		}
		return st.Size, true
	}
}
