package daemon

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/internal/feed"
	"github.com/intentfs/intentfs/internal/procinfo"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// newApprovalQueue returns the approval queue of the mount, which records every
// decision and shows what waits to watchers.
func (g *governor) newApprovalQueue() *approvals.Queue {
	return approvals.New(approvals.Options{
		OnPending:  g.onPending,
		OnDecision: g.onDecision,
		StartTime:  procinfo.StartTime,
		// A killed caller's change ends as cancelled on every transport,
		// whether or not the kernel interrupts its request.
		CallerKilled: procinfo.Killed,
	})
}

// Hold puts an allowed change to the approval rules of the policy in
// force; a change one of them holds waits here for a human.
func (g *governor) Hold(ctx context.Context, h fsnode.HoldRequest) syscall.Errno {
	rules := g.engine.Snapshot().ApprovalRulesFor(h.Request.Intent)
	if len(rules) == 0 {
		return 0
	}
	req := h.Request
	held := approvals.Held{Op: req.Op, Path: req.Path, Path2: req.Path2, Intent: req.Intent,
		Session: sessionID(h.Session), Process: h.Process, Uid: req.Caller.Uid, Pid: req.Caller.Pid, Destroys: req.Destroys, Size: h.Size, Removes: req.Removes}
	if h.Observe {
		if rule := g.approvals.WouldHold(held, rules); rule != nil {
			g.wouldHold(req, rule, h)
		}
		return 0
	}
	v := g.approvals.Hold(ctx, held, rules)
	switch {
	case v.Proceed:
		return 0
	case v.Interrupted:
		return syscall.EINTR
	}
	g.Denied(req, policy.Decision{Code: v.Code, Reason: v.Reason, Validation: policy.ValidationFail, Path: req.Path}, h.Process, h.Session)
	return syscall.EACCES
}

// CodeWouldHold is the code of the record of a change an approval rule
// would have held, let through because its intent is in observe mode.
const CodeWouldHold = "WOULD_HOLD"

// wouldHold records that rule would have held the change h, which goes
// ahead: the approval record names the rule, the change's own record
// follows once it is made.
func (g *governor) wouldHold(req policy.Request, rule *policy.ApprovalRule, h fsnode.HoldRequest) {
	g.counters.wouldHold.Add(1)
	reason := fmt.Sprintf("approval rule %s (%s) would have held this change for a human; observe mode let it proceed", rule.Name, rule.Describe())
	g.log.Info("would hold", "op", req.Op, "path", req.Path, "intent", req.Intent, "rule", rule.Name)
	c := ledger.Change{Event: ledger.EventApproval, Path: req.Path, FromPath: req.Path2, Intent: req.Intent, Op: string(req.Op),
		Code: CodeWouldHold, Reason: reason, Process: h.Process, Session: h.Session, Time: time.Now()}
	g.Record(c)
	if g.feed.Active() {
		ev := feed.Event{Kind: feed.KindGovernance, Event: string(ledger.EventApproval), Op: c.Op, Path: c.Path, Path2: c.FromPath,
			Intent: c.Intent, Session: sessionID(c.Session), Code: c.Code, Reason: reason, Time: c.Time}
		setProcess(&ev, c.Process)
		g.feed.Publish(ev)
	}
}

// sessionID names a session in what waits and what watchers see.
func sessionID(s *ledger.Session) string {
	if s == nil {
		return ""
	}
	return s.ID
}

// onPending shows a new entry to watchers.
func (g *governor) onPending(p approvals.Pending) {
	g.log.Info("waiting for a human", "id", p.ID, "kind", p.Kind, "op", p.Op, "path", p.Path, "rule", p.Rule)
	if !g.feed.Active() {
		return
	}
	ev := feed.Event{Kind: feed.KindHeld, ID: p.ID, Op: p.Op, Path: p.Path, Path2: p.Path2, Intent: p.Intent,
		Session: p.Session, Reason: p.Why, Time: p.Since}
	if p.Kind == approvals.KindScopeRequest {
		ev.Op, ev.Path = "scope_request", strings.Join(p.Paths, " ")
	}
	setProcess(&ev, p.Process)
	g.feed.Publish(ev)
}

// onDecision records a decision and shows it to watchers.
func (g *governor) onDecision(dec approvals.Decision) {
	p := dec.Pending
	op, path := p.Op, p.Path
	if p.Kind == approvals.KindScopeRequest {
		op, path = "scope_request", ""
	}
	g.log.Info("decided", "id", p.ID, "verdict", dec.Verdict, "by", dec.By, "op", op, "path", path)
	reason := decisionReason(dec)
	g.Record(ledger.Change{Event: ledger.EventApproval, Path: path, FromPath: p.Path2, Intent: p.Intent, Op: op,
		Code: strings.ToUpper(dec.Verdict), Reason: reason, Process: dec.ByProcess, Time: dec.At})
	if g.feed.Active() {
		ev := feed.Event{Kind: feed.KindDecided, Event: string(ledger.EventApproval), ID: p.ID, Verdict: dec.Verdict, By: dec.By,
			Op: op, Path: path, Path2: p.Path2, Intent: p.Intent, Session: p.Session, Reason: reason, Time: dec.At}
		setProcess(&ev, dec.ByProcess)
		g.feed.Publish(ev)
	}
}

// decisionReason says in the ledger what was decided, by whom and why.
func decisionReason(dec approvals.Decision) string {
	p := dec.Pending
	var b strings.Builder
	if p.Kind == approvals.KindScopeRequest {
		fmt.Fprintf(&b, "scope request %d for %s (%s)", p.ID, strings.Join(p.Paths, ", "), p.Why)
	} else {
		fmt.Fprintf(&b, "held change %d (rule %s: %s)", p.ID, p.Rule, p.Why)
	}
	fmt.Fprintf(&b, " %s by %s after %s", strings.ReplaceAll(dec.Verdict, "_", " "), dec.By, dec.At.Sub(p.Since).Round(time.Millisecond))
	if dec.Verdict == approvals.VerdictTimedOut {
		b.Reset()
		fmt.Fprintf(&b, "held change %d (rule %s: %s) timed out after %s", p.ID, p.Rule, p.Why, dec.At.Sub(p.Since).Round(time.Second))
	}
	switch {
	case dec.ForProcess:
		b.WriteString(", covering the rule's changes by that process for as long as it runs")
	case dec.For > 0:
		fmt.Fprintf(&b, ", covering the rule's changes by that process for %s", dec.For)
	}
	if p.Process != nil {
		fmt.Fprintf(&b, "; the waiting process was pid %d (%s)", p.Process.Pid, textsafe.Escape(p.Process.Comm))
	}
	if p.Session != "" {
		fmt.Fprintf(&b, " in session %s", p.Session)
	}
	if dec.Reason != "" {
		b.WriteString(": " + dec.Reason)
	}
	return b.String()
}

// publishRecord shows a recorded change or governance event to watchers.
func (g *governor) publishRecord(c ledger.Change) {
	kind := feed.KindChange
	switch {
	case c.Event == ledger.EventApproval:
		return // shown by onPending and onDecision, with the entry's id
	case ledger.ClassOf(c.Event) == "":
		kind = feed.KindGovernance
	}
	ev := feed.Event{Kind: kind, Event: string(c.Event), Op: c.Op, Path: c.Path, Path2: c.FromPath, Intent: c.Intent,
		Session: sessionID(c.Session), Code: c.Code, Reason: c.Reason, Time: c.Time}
	setProcess(&ev, c.Process)
	g.feed.Publish(ev)
}

// publishDenial shows a refused change to watchers.
func (g *governor) publishDenial(dn control.Denial) {
	ev := feed.Event{Kind: feed.KindDenied, Event: string(ledger.EventDenied), Op: dn.Op, Path: dn.Path, Path2: dn.Path2,
		Intent: dn.Intent, Session: dn.Session, Code: dn.Code, Reason: dn.Reason, Time: dn.Time}
	setProcess(&ev, dn.Process)
	g.feed.Publish(ev)
}

func setProcess(ev *feed.Event, p *ledger.Process) {
	if p != nil {
		ev.Pid, ev.Uid, ev.Comm = p.Pid, p.Uid, p.Comm
	}
}
