package daemon

import (
	"os"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/workflow"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// The operations below are what a program that embeds a mount calls in
// process (the CLI's temporary mount for acceptance checks, tests), as
// the control socket's clients do through controlBackend.

// IntentOp carries out a lifecycle command; the policy is reloaded at once.
func (d *Daemon) IntentOp(r workflow.Request, by *ledger.Process) error { return d.wf.Do(r, by) }

// Approvals lists what waits for a human and the recent decisions.
func (d *Daemon) Approvals() ([]approvals.Pending, []approvals.Decision) {
	return d.approvals.List(), d.approvals.Recent()
}

// DecideApproval carries out a human's decision on what waits (see
// controlBackend.decideApproval).
func (d *Daemon) DecideApproval(r control.DecideRequest, by *ledger.Process) ([]approvals.Decision, error) {
	return controlBackend{d}.decideApproval(r, by)
}

// Snapshot returns the policy in force.
func (d *Daemon) Snapshot() *policy.Snapshot { return d.engine.Snapshot() }

// ActiveIntent returns the intent selected for the mount, in force
// outside every agent session ("" for none).
func (d *Daemon) ActiveIntent() string { return d.actors.mountIntent() }

// Select makes id the active intent, "" for none: for by's session when
// by is a session's process, else for the mount (see actors.selectIntent).
func (d *Daemon) Select(id string, by *ledger.Process) error {
	// Writes made under the intent in force are recorded under it
	// before the select is (see fsnode.cachedWriter).
	d.settleWrites()
	return d.actors.selectIntent(id, by)
}

// StartSession registers the agent session whose root process is
// spec.RootPid, selects its intent and claims it. Only the mount's owner
// reaches this (the control socket); the session's processes start once
// it returns.
func (d *Daemon) StartSession(spec agent.Spec, by *ledger.Process) (agent.Info, error) {
	return d.actors.start(spec, by)
}

// Sessions lists the live sessions, then the recently ended ones.
func (d *Daemon) Sessions() []agent.Info { return d.actors.list() }

// EndSessions kills every agent session of the mount and waits for
// their ends to be recorded. It returns how many there were. The mount
// stays: Unmount follows.
func (d *Daemon) EndSessions() int { return d.actors.endAll() }

// Denials returns the recent denials, oldest first: a session's own for
// a process of that session, else all of them.
func (d *Daemon) Denials(by *ledger.Process) []control.Denial {
	all := d.gov.denials.list()
	s, err := d.actors.sessionOf(by)
	if err != nil || s == nil {
		return all
	}
	own := all[:0]
	for _, dn := range all {
		if dn.Session == s.ID() {
			own = append(own, dn)
		}
	}
	return own
}

// Revert undoes recorded changes directly in the source, as the human
// who asked; each step is recorded under the intent of the record it
// undoes.
func (d *Daemon) Revert(r history.Request, by *ledger.Process) (*history.Plan, int, error) {
	// What the cached data path's writers wrote is recorded first: a
	// change not yet in the ledger would not be undone.
	d.settleWrites()
	return d.opened.Revert(r, by)
}

// Status describes the mount.
func (d *Daemon) Status() control.Status {
	// What the cached data path's writers wrote is recorded before the
	// ledger's figures are read; they keep writing (the page polls
	// status, and must not end a writer at work).
	d.checkpointWrites()
	st := control.Status{
		Mountpoint: d.cfg.Mountpoint, Source: d.cfg.Source, Pid: os.Getpid(), Version: d.cfg.Version,
		StartedAt: d.started, ActiveIntent: d.ActiveIntent(), FailOpen: d.cfg.FailOpen,
		LedgerPath: d.LedgerPath(), Ledger: d.writer.Stats(),
		Policy: d.engine.State(), RecentDenials: d.gov.denials.list(), OpenWriters: openWriters(d.root), Waiting: len(d.approvals.List()),
		SourceWatched: d.cacheTimeout == longCache, CacheSeconds: d.cacheTimeout.Seconds(),
	}
	if m := d.mounted.Load(); m != nil {
		st.Transport, st.Passthrough, st.DataPath = m.transport, m.passthrough, m.dataPath
	}
	st.Upstream = upstreamStatusToWire(d.upstream.configured().Status())
	st.Signing = d.signingStatus()
	if in := d.engine.Snapshot().Intents.Get(st.ActiveIntent); in != nil {
		st.IntentName, st.IntentStatus = in.Name, string(in.Status)
	}
	st.Counters = control.Counters{Allowed: d.gov.counters.allowed.Load(), Denied: d.gov.counters.denied.Load(),
		Recorded: d.gov.counters.recorded.Load(), WouldDeny: d.gov.counters.wouldDeny.Load(), WouldHold: d.gov.counters.wouldHold.Load()}
	snap := d.engine.Snapshot()
	st.Enforcement = string(snap.EnforcementFor(st.ActiveIntent))
	st.WorkspaceEnforcement = string(snap.EnforcementFor(""))
	if snap != nil && snap.Intents != nil {
		for _, in := range snap.Intents.List {
			if len(st.IntentEnforcement) == control.MaxIntentEnforcement {
				break
			}
			st.IntentEnforcement = append(st.IntentEnforcement, control.IntentEnforcement{ID: in.ID, Status: string(in.Status), Enforcement: string(snap.EnforcementFor(in.ID))})
		}
	}
	if d.root != nil {
		st.Counters.BytesHashed = d.root.Hashes().BytesHashed()
		st.Counters.HashCacheHits = d.root.Hashes().Hits()
	}
	if d.ops != nil {
		st.Ops = d.ops.Counts()
	}
	if len(st.RecentDenials) > 10 {
		st.RecentDenials = st.RecentDenials[len(st.RecentDenials)-10:]
	}
	sessions := d.actors.list()
	st.Sessions = sessionsToWire(sessions)
	st.FilePermissions = d.scopePermissions(sessions)
	if d.store != nil {
		st.Store = storeUsageToWire(d.store.Usage())
	}
	if d.exporter != nil {
		s := exportStatsToWire(d.exporter.Stats())
		st.Export = &s
	}
	return st
}
