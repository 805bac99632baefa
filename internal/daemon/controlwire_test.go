package daemon

import (
	"encoding/json"
	"testing"
	"time"

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

// TestControlWireKeepsTheJSON holds the control plane's wire types to the
// JSON the internal packages' own types produce: a CLI and a daemon of
// the same build must read each other's messages, and the --json output
// of commands must not change with the conversion.
func TestControlWireKeepsTheJSON(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	proc := &ledger.Process{Pid: 7, Uid: 1000, Comm: "sh"}
	pending := approvals.Pending{ID: 3, Kind: approvals.KindHold, Op: "unlink", Path: "a", Path2: "b", Intent: "INT-1",
		Session: "s1", Rule: "r", Why: "w", Paths: []string{"x/**"}, Process: proc, Since: now, Deadline: now.Add(time.Minute)}
	decision := approvals.Decision{Pending: pending, Verdict: approvals.VerdictApproved, By: "me", ByProcess: proc,
		For: time.Second, ForProcess: true, Reason: "ok", At: now}
	spec := agent.Spec{Name: "n", User: "u", Uid: 1, Gid: 2, Intent: "INT-1", Pinned: true, Model: "m", Conversation: "c", Check: true, RootPid: 9}
	info := agent.Info{ID: "s1", Spec: spec, Intent: "INT-2", Started: now, Ended: &now, Live: true, Changes: 4, Denials: 5}
	plan := &history.Plan{Steps: []history.Step{{Record: "r", Intent: "i", Event: "e", Action: "restore", Path: "p", To: "t",
		Hash: "h", Moved: "m", Mode: "0644", Conflict: "c", Note: "n"}}, AlreadyReverted: 2}
	intentReq := workflow.Request{Action: "new", ID: "INT-1", Reason: "r", Add: []string{"a"}, Remove: []string{"b"},
		New: &policyedit.NewIntent{ID: "INT-1", Name: "n", Scope: []string{"s"}, Constraints: []string{"c"},
			AcceptanceCriteria: []string{"a"}, Parent: "p", Now: now},
		Force: true, Results: []workflow.CheckResult{{Text: "t", Check: "c", Passed: true, ExitCode: 1, Output: "o", Seconds: 1.5}}}
	ev := feed.Event{Seq: 1, Time: now, Kind: feed.KindHeld, Event: "create", Op: "o", Path: "p", Path2: "q", Intent: "i",
		Session: "s", Code: "c", Reason: "r", Pid: 2, Uid: 3, Comm: "sh", ID: 4, Verdict: "v", By: "b", Dropped: 5}

	cases := []struct {
		name         string
		domain, wire any
	}{
		{"pending", pending, pendingToWire([]approvals.Pending{pending})[0]},
		{"decision", decision, decisionToWire(decision)},
		{"session info", info, sessionInfoToWire(info)},
		{"session spec", spec, control.SessionSpec(spec)},
		{"revert plan", plan, revertPlanToWire(plan)},
		{"revert request", history.Request{Record: "r", Intent: "i", DryRun: true, Force: true},
			control.RevertRequest{Record: "r", Intent: "i", DryRun: true, Force: true}},
		{"intent request", intentReq, nil},
		{"event", ev, eventToWire(ev)},
		{"accept request", accept.Request{Paths: []string{"a"}, Reason: "r"}, control.AcceptRequest{Paths: []string{"a"}, Reason: "r"}},
		{"accept result", accept.Result{Path: "p", Hash: "h", Mode: "m", Owner: "o"}, control.Accepted{Path: "p", Hash: "h", Mode: "m", Owner: "o"}},
		{"upstream", upstream.Status{Configured: true, URL: "u", Ref: "r", Commit: "c", FetchedAt: now, Fetching: true, LastErr: "e", Mirror: "m", Fetches: 3},
			upstreamStatusToWire(upstream.Status{Configured: true, URL: "u", Ref: "r", Commit: "c", FetchedAt: now, Fetching: true, LastErr: "e", Mirror: "m", Fetches: 3})},
		{"store", objects.Usage{Bytes: 1, Objects: 2, CopiedBytes: 3, MaxBytes: 4, AvailBytes: 5, CopiedByUID: map[uint32]int64{1000: 6}, Refused: 7},
			storeUsageToWire(objects.Usage{Bytes: 1, Objects: 2, CopiedBytes: 3, MaxBytes: 4, AvailBytes: 5, CopiedByUID: map[uint32]int64{1000: 6}, Refused: 7})},
		{"export", otelexport.Stats{Endpoint: "e", Protocol: "p", Exported: 1, Failed: 2, Dropped: 3, Queued: 4, LastError: "l"},
			exportStatsToWire(otelexport.Stats{Endpoint: "e", Protocol: "p", Exported: 1, Failed: 2, Dropped: 3, Queued: 4, LastError: "l"})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := json.Marshal(c.domain)
			if err != nil {
				t.Fatal(err)
			}
			wire := c.wire
			if c.name == "intent request" {
				// The wire form travels the other way: decode what a CLI
				// sends and convert it back.
				var w control.IntentRequest
				if err := json.Unmarshal(want, &w); err != nil {
					t.Fatal(err)
				}
				wire = intentRequestFromWire(w)
			}
			got, err := json.Marshal(wire)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("wire JSON differs:\n got  %s\n want %s", got, want)
			}
		})
	}
}

// TestControlEventKindsAreTheFeeds: the daemon passes a feed event's
// kind through unchanged, so the two lists must agree.
func TestControlEventKindsAreTheFeeds(t *testing.T) {
	for _, k := range [][2]string{
		{feed.KindChange, control.EventChange}, {feed.KindDenied, control.EventDenied},
		{feed.KindHeld, control.EventHeld}, {feed.KindDecided, control.EventDecided},
		{feed.KindGovernance, control.EventGovernance}, {feed.KindDropped, control.EventDropped},
		{approvals.KindHold, control.PendingHold}, {approvals.KindScopeRequest, control.PendingScopeRequest},
		{approvals.VerdictApproved, control.VerdictApproved}, {approvals.VerdictDenied, control.VerdictDenied},
		{approvals.VerdictTimedOut, control.VerdictTimedOut}, {approvals.VerdictCancelled, control.VerdictCancelled},
	} {
		if k[0] != k[1] {
			t.Errorf("internal %q is %q on the wire", k[0], k[1])
		}
	}
}
