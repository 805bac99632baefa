package daemon

import (
	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/accept"
	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/internal/feed"
	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/otelexport"
	"github.com/intentfs/intentfs/internal/policyedit"
	"github.com/intentfs/intentfs/internal/upstream"
	"github.com/intentfs/intentfs/internal/workflow"
	"github.com/intentfs/intentfs/ledger"
)

// controlBackend is the daemon as the control plane sees it
// (control.Backend): the operations of the control socket and of the
// in-mount .intentfs/ files, carried out by the daemon's parts, with the
// values that cross the socket converted to and from the control
// package's wire types here, so that control depends on none of the
// packages behind the daemon.
type controlBackend struct{ *Daemon }

var _ control.Backend = controlBackend{}

// IntentOp carries out a lifecycle command on the mounted source.
func (b controlBackend) IntentOp(r control.IntentRequest, by *ledger.Process) error {
	return b.wf.Do(intentRequestFromWire(r), by)
}

// Revert undoes recorded changes in the source.
func (b controlBackend) Revert(r control.RevertRequest, by *ledger.Process) (*control.RevertPlan, int, error) {
	plan, n, err := b.Daemon.Revert(history.Request(r), by)
	return revertPlanToWire(plan), n, err
}

// StartSession registers an agent session.
func (b controlBackend) StartSession(spec control.SessionSpec, by *ledger.Process) (control.SessionInfo, error) {
	info, err := b.actors.start(agent.Spec(spec), by)
	return sessionInfoToWire(info), err
}

// Sessions lists the live sessions, then the recently ended ones.
func (b controlBackend) Sessions() []control.SessionInfo {
	return sessionsToWire(b.actors.list())
}

// Approvals lists what waits for a human and the recent decisions.
func (b controlBackend) Approvals() ([]control.Pending, []control.Decision) {
	return pendingToWire(b.approvals.List()), decisionsToWire(b.approvals.Recent())
}

// DecideApproval carries out a human's decision.
func (b controlBackend) DecideApproval(r control.DecideRequest, by *ledger.Process) ([]control.Decision, error) {
	ds, err := b.decideApproval(r, by)
	return decisionsToWire(ds), err
}

// Accept records a human's acknowledgement of paths.
func (b controlBackend) Accept(r control.AcceptRequest, by *ledger.Process) ([]control.Accepted, error) {
	res, err := b.Daemon.Accept(accept.Request(r), by)
	var out []control.Accepted
	for _, a := range res {
		out = append(out, control.Accepted(a))
	}
	return out, err
}

// Settle records what the cached data path's writers have written so far,
// keeping them writing, and flushes the ledger.
func (b controlBackend) Settle() error {
	b.checkpointWrites()
	return b.FlushLedger()
}

// Watch subscribes to the mount's events. A goroutine takes them from
// the feed's bounded buffer, as a watcher is shown them, and hands them
// on converted until cancel: a slow watcher still loses events in the
// feed, never slows the mount.
func (b controlBackend) Watch() (<-chan control.Event, func(), error) {
	sub, cancelSub, err := b.gov.feed.Subscribe()
	if err != nil {
		return nil, nil, err
	}
	out := make(chan control.Event)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case ev := <-sub.C():
				for _, e := range sub.Take(ev) {
					select {
					case out <- eventToWire(e):
					case <-done:
						return
					}
				}
			}
		}
	}()
	cancel := func() {
		close(done)
		cancelSub()
	}
	return out, cancel, nil
}

func intentRequestFromWire(r control.IntentRequest) workflow.Request {
	out := workflow.Request{Action: r.Action, ID: r.ID, Reason: r.Reason, Add: r.Add, Remove: r.Remove, Force: r.Force}
	if r.New != nil {
		n := policyedit.NewIntent(*r.New)
		out.New = &n
	}
	for _, c := range r.Results {
		out.Results = append(out.Results, workflow.CheckResult(c))
	}
	return out
}

func revertPlanToWire(p *history.Plan) *control.RevertPlan {
	if p == nil {
		return nil
	}
	out := &control.RevertPlan{AlreadyReverted: p.AlreadyReverted}
	if p.Steps != nil {
		out.Steps = make([]control.RevertStep, len(p.Steps))
		for i, s := range p.Steps {
			out.Steps[i] = control.RevertStep(s)
		}
	}
	return out
}

func sessionInfoToWire(i agent.Info) control.SessionInfo {
	return control.SessionInfo{ID: i.ID, SessionSpec: control.SessionSpec(i.Spec), Intent: i.Intent,
		Started: i.Started, Ended: i.Ended, Live: i.Live, Changes: i.Changes, Denials: i.Denials}
}

func sessionsToWire(in []agent.Info) []control.SessionInfo {
	if in == nil {
		return nil
	}
	out := make([]control.SessionInfo, len(in))
	for i, s := range in {
		out[i] = sessionInfoToWire(s)
	}
	return out
}

func pendingToWire(in []approvals.Pending) []control.Pending {
	if in == nil {
		return nil
	}
	out := make([]control.Pending, len(in))
	for i, p := range in {
		out[i] = control.Pending(p)
	}
	return out
}

func decisionToWire(d approvals.Decision) control.Decision {
	return control.Decision{Pending: control.Pending(d.Pending), Verdict: d.Verdict, By: d.By, ByProcess: d.ByProcess,
		For: d.For, ForProcess: d.ForProcess, Reason: d.Reason, At: d.At}
}

func decisionsToWire(in []approvals.Decision) []control.Decision {
	if in == nil {
		return nil
	}
	out := make([]control.Decision, len(in))
	for i, d := range in {
		out[i] = decisionToWire(d)
	}
	return out
}

func eventToWire(e feed.Event) control.Event {
	return control.Event{Seq: e.Seq, Time: e.Time, Kind: e.Kind, Event: e.Event, Op: e.Op, Path: e.Path, Path2: e.Path2,
		Intent: e.Intent, Session: e.Session, Code: e.Code, Reason: e.Reason, Pid: e.Pid, Uid: e.Uid, Comm: e.Comm,
		ID: e.ID, Verdict: e.Verdict, By: e.By, Dropped: e.Dropped}
}

func upstreamStatusToWire(s upstream.Status) control.UpstreamStatus { return control.UpstreamStatus(s) }

func exportStatsToWire(s otelexport.Stats) control.ExportStats { return control.ExportStats(s) }

func storeUsageToWire(u objects.Usage) control.StoreUsage { return control.StoreUsage(u) }
