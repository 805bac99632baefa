package fsnode

import (
	"context"
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/upstreamplan"
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
	// toward the declared upstream (see upstreamplan.Plan).
	upstream *upstreamplan.Plan
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

// authorizeAs is the front door of every change through the mount: each
// operation that changes the source (open for writing, create, mkdir,
// unlink, rename, link, setattr, xattr) passes here before it acts, and
// acts only on the grant it returns. The steps, in order:
//
//  1. actor: whom the request acts for, its session and that session's
//     intent, or the mount's (actorOf, actor.go);
//  2. decision: the current policy snapshot decides the request
//     (policy.Snapshot.Decide, policy/decide.go);
//  3. exceptions: git bringing the declared upstream's content outside
//     the scope (upstreamOutside, upstream.go), observe mode turning a
//     scope refusal into a recorded would-deny (observed, observe.go), a
//     git ref update the commit gate refuses (watchGit, gitwatch.go);
//  4. refusal: a denial is recorded and answered EACCES, unless the
//     change may be work on a provisional file (provisional_ops.go);
//  5. stale target: a write over a file changed since the session read
//     it (staleTarget, stale.go);
//  6. ledger health: a change the ledger cannot record is refused (fail
//     closed);
//  7. approval hold: a change an approval rule covers waits for a person
//     (hold, hold.go).
//
// Steps 1 to 6 are decide. Then the operation, with the grant, keeps the
// pre-image of what it is about to destroy as the daemon (preImageAt,
// preimage.go), makes the change as the caller, and records it
// (Root.record, record.go): at once, or for a handle at RELEASE.
// provisional says whether a change the scope refuses may be allowed as
// work on a provisional file.
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

// decide is steps 1 to 6 of authorizeAs, as the daemon.
func (r *Root) decide(ctx context.Context, req policy.Request, provisional bool) (grant, syscall.Errno) {
	caller := requestCaller(ctx, &req)
	// 1. actor.
	a := r.actorOf(caller)
	req.Intent = a.Intent
	// 2. decision.
	snap := r.gov.Snapshot()
	d := decideFor(snap, req, a)
	// 3. exceptions.
	d, up := r.towardUpstream(ctx, caller, req, d)
	d = observed(snap, req, d)
	g := grant{decision: d, intent: req.Intent, actor: a, upstream: up}
	if errno := r.gateGit(ctx, caller, req, &g); errno != 0 {
		return g, errno
	}
	if d.Allow && !g.traced() {
		// Exempt changes skip the /proc lookup: they are the bulk of a
		// git commit or a build and need no attribution.
		return g, 0
	}
	g.proc = r.gov.Process(caller)
	// 4. refusal.
	if !d.Allow {
		return r.refuseDenied(ctx, req, g, snap, provisional)
	}
	// 5. stale target.
	if errno := r.refuseStale(req, snap, &g); errno != 0 {
		return g, errno
	}
	// 6. ledger health.
	if errno := r.refuseUnrecordable(req, g); errno != 0 {
		return g, errno
	}
	if req.Op != policy.OpRename && req.Op != policy.OpLink {
		// A name the scope in force for this caller covers is governed
		// from now on, even if another intent's save left a temporary
		// there: its changes are recorded, and it is not removed.
		r.prov.adopt(req.Path)
	}
	return g, 0
}

// requestCaller is the caller of ctx, also set as req's.
func requestCaller(ctx context.Context, req *policy.Request) *fuse.Caller {
	caller, _ := fuse.FromContext(ctx)
	if caller != nil {
		req.Caller = policy.Caller{Pid: caller.Pid, Uid: caller.Uid, Gid: caller.Gid}
	}
	return caller
}

// decideFor is step 2: snap's decision of req for a; a process that
// could not be placed has no intent, and its refusal says so.
func decideFor(snap *policy.Snapshot, req policy.Request, a Actor) policy.Decision {
	d := snap.Decide(req)
	if !d.Allow && a.Unplaced != nil {
		d.Code = CodeUnplaced
		d.Reason = a.Unplaced.Error() + ", so it has no intent: " + d.Reason
	}
	return d
}

// towardUpstream is the first exception of step 3: a change the scope
// refuses may be git bringing the declared upstream's content (see
// upstreamOutside).
func (r *Root) towardUpstream(ctx context.Context, caller *fuse.Caller, req policy.Request, d policy.Decision) (policy.Decision, *upstreamplan.Plan) {
	if !d.Allow && d.Code == policy.CodeOutOfScope {
		return r.upstreamOutside(ctx, caller, req, d)
	}
	return d, nil
}

// gateGit is the last exception of step 3: an allowed change inside a
// git directory is put to the commit gate (see watchGit), which may
// refuse it.
func (r *Root) gateGit(ctx context.Context, caller *fuse.Caller, req policy.Request, g *grant) syscall.Errno {
	if !g.decision.Allow {
		return 0
	}
	deny, after, judged := r.watchGit(ctx, caller, g.actor.Session, req)
	if deny != nil {
		g.proc = r.gov.Process(caller)
		r.gov.Denied(req, *deny, g.proc, g.actor.Session)
		return syscall.EACCES
	}
	g.after, g.refContent = after, judged
	return 0
}

// refuseDenied is step 4: g's decision is a refusal. It is recorded and
// answered EACCES, unless the source would answer otherwise or the change
// may be work on a provisional file.
func (r *Root) refuseDenied(ctx context.Context, req policy.Request, g grant, snap *policy.Snapshot, provisional bool) (grant, syscall.Errno) {
	d := g.decision
	if req.Op == policy.OpRmdir && r.hasEntries(ctx, req.Path) {
		// The source would answer ENOTEMPTY: git tries to remove
		// every directory it empties of tracked files (after a
		// pull, say), and a denial of each would be a denial of
		// nothing.
		return g, syscall.ENOTEMPTY
	}
	if provisional && g.upstream == nil {
		var why string
		// A temporary whose removal the ledger could not record is
		// not made: the refusal below stands (fail closed).
		if g.provisional, why = r.mayBeProvisional(req, d, snap, g.actor); g.provisional && r.gov.LedgerErr() == nil {
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
	r.gov.Denied(req, d, g.proc, g.actor.Session)
	return g, syscall.EACCES
}

// refuseStale is step 5: an allowed write over a file that changed since
// the session read it is refused, or under an intent that records such
// writes, marked in g.
func (r *Root) refuseStale(req policy.Request, snap *policy.Snapshot, g *grant) syscall.Errno {
	if g.actor.Versions == nil {
		return 0
	}
	stale := r.staleTarget(req, g.actor)
	if stale == "" {
		return 0
	}
	if in := snap.Intents.Get(req.Intent); in == nil || in.OnStale != policy.StaleRecord {
		d := policy.Decision{Path: g.decision.Path, Code: CodeStale, Validation: policy.ValidationFail, Reason: stale}
		r.gov.Denied(req, d, g.proc, g.actor.Session)
		return syscall.EACCES
	}
	g.stale = stale
	return 0
}

// refuseUnrecordable is step 6. Fail closed: a change the ledger cannot
// record is not made.
func (r *Root) refuseUnrecordable(req policy.Request, g grant) syscall.Errno {
	err := r.gov.LedgerErr()
	if err == nil {
		return 0
	}
	d := policy.Decision{Path: g.decision.Path, Code: CodeLedgerUnavailable, Validation: policy.ValidationFail,
		Reason: "the ledger cannot record changes now (" + err.Error() + "); the change is refused until it can"}
	r.gov.Denied(req, d, g.proc, g.actor.Session)
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return syscall.ENOSPC
	}
	return syscall.EACCES
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
