package fsnode

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// grant is an allowed change, with what is needed to record it.
type grant struct {
	decision policy.Decision
	intent   string
	proc     *ledger.Process
}

// traced reports whether the change goes to the ledger; exempt paths
// (.intentignore, .git internals) are not traced.
func (g grant) traced() bool { return g.decision.Code != policy.CodeExempt }

// authorize puts a change to the policy. On a denial it records it and
// returns EACCES.
func (r *Root) authorize(ctx context.Context, req policy.Request) (grant, syscall.Errno) {
	caller, _ := fuse.FromContext(ctx)
	if caller != nil {
		req.Caller = policy.Caller{Pid: caller.Pid, Uid: caller.Uid, Gid: caller.Gid}
	}
	req.Intent = r.gov.ActiveIntent()
	d := r.gov.Snapshot().Decide(req)
	g := grant{decision: d, intent: req.Intent}
	if d.Allow && !g.traced() {
		// Exempt changes skip the /proc lookup: they are the bulk of a
		// git commit or a build and need no attribution.
		return g, 0
	}
	g.proc = r.gov.Process(caller)
	if !d.Allow {
		r.gov.Denied(req, d, g.proc)
		return g, syscall.EACCES
	}
	return g, 0
}

// denyUndecidable records and refuses a change whose path could not be
// resolved, unless the operator chose fail-open.
func (r *Root) denyUndecidable(ctx context.Context, op policy.Op, why string) syscall.Errno {
	snap := r.gov.Snapshot()
	d := snap.Deny("", why)
	if d.Allow {
		return 0
	}
	caller, _ := fuse.FromContext(ctx)
	r.gov.Denied(policy.Request{Op: op, Intent: r.gov.ActiveIntent()}, d, r.gov.Process(caller))
	return syscall.EACCES
}

// record appends a change made under g to the ledger.
func (r *Root) record(g grant, c ledger.Change) {
	if !g.traced() {
		return
	}
	c.Intent = g.intent
	c.Process = g.proc
	c.Validation = string(g.decision.Validation)
	r.gov.Record(c)
}
