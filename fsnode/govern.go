package fsnode

import (
	"context"
	"errors"
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
	// after, if set, runs once the change is made (see gitchange.Watcher).
	after func()
	actor Actor
	// stale, if set, says that the change writes a file changed since
	// the session read it, under an intent that records rather than
	// refuses such writes.
	stale string
	// upstream, if set, is the plan of git's change outside the scope
	// toward the declared upstream (see UpstreamSource).
	upstream *upstreamPlan
	// refContent, if set, is what a rename onto a git ref was judged
	// from (see gitchange.Change.Judged).
	refContent []byte
	// provisional is set when the scope refused the change and it is
	// allowed only as work on a provisional file (see provisional.go):
	// decision is the refusal, which is recorded if the change turns out
	// not to be one.
	provisional bool
}

// traced reports whether the change goes to the ledger; exempt paths
// (.intentignore, .git internals) are not traced.
func (g grant) traced() bool { return g.decision.Code != policy.CodeExempt && !g.provisional }

// authorize puts a change to the policy. On a denial it records it and
// returns EACCES.
func (r *Root) authorize(ctx context.Context, req policy.Request) (g grant, errno syscall.Errno) {
	return r.authorizeSized(ctx, req, nil)
}

// authorizeSized is authorize, then the approval hold (see hold.go);
// size, if set, probes the size of a file the change deletes.
func (r *Root) authorizeSized(ctx context.Context, req policy.Request, size func() (int64, bool)) (g grant, errno syscall.Errno) {
	return r.authorizeAs(ctx, req, size, true)
}

// authorizeAs is authorizeSized; provisional says whether a change the
// scope refuses may be allowed as work on a provisional file.
func (r *Root) authorizeAs(ctx context.Context, req policy.Request, size func() (int64, bool), provisional bool) (g grant, errno syscall.Errno) {
	// Deciding and recording are the daemon's work, also in a request
	// that runs as its caller (see CallerScope).
	if err := r.asDaemon(ctx, func() error {
		g, errno = r.decide(ctx, req, provisional)
		if errno == 0 {
			errno = r.hold(ctx, req, g, size)
		}
		return nil
	}); err != nil {
		r.log.Error("deciding as the daemon failed", "path", req.Path, "err", err)
		return grant{}, syscall.EACCES
	}
	return g, errno
}

func (r *Root) decide(ctx context.Context, req policy.Request, provisional bool) (grant, syscall.Errno) {
	caller, _ := fuse.FromContext(ctx)
	if caller != nil {
		req.Caller = policy.Caller{Pid: caller.Pid, Uid: caller.Uid, Gid: caller.Gid}
	}
	a := r.actorOf(caller)
	req.Intent = a.Intent
	snap := r.gov.Snapshot()
	d := snap.Decide(req)
	if !d.Allow && a.Unplaced != nil {
		d.Code = CodeUnplaced
		d.Reason = a.Unplaced.Error() + ", so it has no intent: " + d.Reason
	}
	var up *upstreamPlan
	if !d.Allow && d.Code == policy.CodeOutOfScope {
		d, up = r.upstreamOutside(ctx, caller, req, d)
	}
	d = observed(snap, req, d)
	g := grant{decision: d, intent: req.Intent, actor: a, upstream: up}
	if d.Allow {
		deny, after, judged := r.watchGit(ctx, caller, a.Session, req)
		if deny != nil {
			g.proc = r.gov.Process(caller)
			r.gov.Denied(req, *deny, g.proc, a.Session)
			return g, syscall.EACCES
		}
		g.after, g.refContent = after, judged
	}
	if d.Allow && !g.traced() {
		// Exempt changes skip the /proc lookup: they are the bulk of a
		// git commit or a build and need no attribution.
		return g, 0
	}
	g.proc = r.gov.Process(caller)
	if d.Allow && a.Versions != nil {
		if stale := r.staleTarget(req, a); stale != "" {
			if in := snap.Intents.Get(req.Intent); in == nil || in.OnStale != policy.StaleRecord {
				d = policy.Decision{Path: d.Path, Code: CodeStale, Validation: policy.ValidationFail, Reason: stale}
				r.gov.Denied(req, d, g.proc, a.Session)
				return g, syscall.EACCES
			}
			g.stale = stale
		}
	}
	if !d.Allow {
		if req.Op == policy.OpRmdir && r.hasEntries(ctx, req.Path) {
			// The source would answer ENOTEMPTY: git tries to remove
			// every directory it empties of tracked files (after a
			// pull, say), and a denial of each would be a denial of
			// nothing.
			return g, syscall.ENOTEMPTY
		}
		if provisional && up == nil {
			var why string
			// A temporary whose removal the ledger could not record is
			// not made: the refusal below stands (fail closed).
			if g.provisional, why = r.mayBeProvisional(req, d, snap, a); g.provisional && r.gov.LedgerErr() == nil {
				return g, 0
			}
			g.provisional = false
			if why != "" {
				d.Reason = joinReason(d.Reason, why)
			}
		}
		// A tool's temporary beside the file it edits: say which file.
		r.nameMeantTarget(&req, &d)
		g.decision = d
		r.gov.Denied(req, d, g.proc, a.Session)
		return g, syscall.EACCES
	}
	if err := r.gov.LedgerErr(); err != nil {
		// Fail closed: a change the ledger cannot record is not made.
		d = policy.Decision{Path: d.Path, Code: CodeLedgerUnavailable, Validation: policy.ValidationFail,
			Reason: "the ledger cannot record changes now (" + err.Error() + "); the change is refused until it can"}
		r.gov.Denied(req, d, g.proc, a.Session)
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return g, syscall.ENOSPC
		}
		return g, syscall.EACCES
	}
	if req.Op != policy.OpRename && req.Op != policy.OpLink {
		// A name the scope in force for this caller covers is governed
		// from now on, even if another intent's save left a temporary
		// there: its changes are recorded, and it is not removed.
		r.prov.adopt(req.Path)
	}
	return g, 0
}

// CodeLedgerUnavailable is the denial code of a change refused because
// the ledger cannot record it.
const CodeLedgerUnavailable policy.Code = "LEDGER_UNAVAILABLE"

// authorizeChild is how every change to a child name of n begins: the
// control directory's name answers onControl (it is not in the source),
// a directory that is gone answers ENOENT, and the change is put to the
// policy with req.Path set to the child's path, which it returns.
func (n *Node) authorizeChild(ctx context.Context, name string, onControl syscall.Errno, req policy.Request) (string, grant, syscall.Errno) {
	if n.isControlName(name) {
		return "", grant{}, onControl
	}
	rel, ok := n.childPath(name)
	if !ok {
		return "", grant{}, syscall.ENOENT
	}
	req.Path = rel
	var size func() (int64, bool)
	if n.root.gov.Snapshot().HasApprovalRules() {
		size = n.childSize(name)
	}
	g, errno := n.root.authorizeSized(ctx, req, size)
	return rel, g, errno
}

// record appends a change made under g to the ledger.
func (r *Root) record(g grant, c ledger.Change) {
	if g.after != nil {
		g.after()
	}
	if !g.traced() {
		return
	}
	c.Intent = g.intent
	c.Process = g.proc
	c.Session = g.actor.Session
	c.Validation = string(g.decision.Validation)
	g.noteWouldDeny(&c)
	if g.upstream != nil {
		if c.RestoredFrom == "" {
			c.RestoredFrom = g.upstream.restoredFrom()
		}
		if c.Reason == "" {
			c.Reason = g.decision.Reason
		}
	}
	if g.stale != "" && c.Code == "" {
		c.Code = string(CodeStale)
		c.Reason = joinReason(c.Reason, g.stale)
	}
	r.gov.Record(c)
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
