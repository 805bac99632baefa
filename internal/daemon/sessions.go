package daemon

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// ActorOf places the process behind a request: inside an agent session
// the session's own intent is in force, outside any the mount's. A
// process that cannot be placed gets no intent.
func (d *Daemon) ActorOf(c *fuse.Caller) fsnode.Actor {
	if c == nil {
		return fsnode.Actor{Intent: d.ActiveIntent()}
	}
	s, err := d.sessions.Place(c.Pid)
	switch {
	case err != nil:
		return fsnode.Actor{Unplaced: err}
	case s == nil:
		return fsnode.Actor{Intent: d.ActiveIntent()}
	}
	return fsnode.Actor{Intent: s.Intent(), Session: s.Ref(), Versions: s.Versions()}
}

// sessionOf returns the session by's process belongs to (nil for none, or
// for nil by).
func (d *Daemon) sessionOf(by *ledger.Process) (*agent.Session, error) {
	if by == nil {
		return nil, nil
	}
	return d.sessions.Place(by.Pid)
}

// intentFor returns the intent in force for by, "" when none is or when
// by cannot be placed.
func (d *Daemon) intentFor(by *ledger.Process) string {
	s, err := d.sessionOf(by)
	switch {
	case err != nil:
		return ""
	case s != nil:
		return s.Intent()
	}
	return d.ActiveIntent()
}

// SessionOf returns the id of by's live session, "" for none.
func (d *Daemon) SessionOf(by *ledger.Process) string {
	if s, err := d.sessionOf(by); err == nil && s != nil {
		return s.ID()
	}
	return ""
}

// StartSession registers the agent session whose root process is
// spec.RootPid, selects its intent and claims it. Only the mount's owner
// reaches this (the control socket); the session's processes start once
// it returns.
func (d *Daemon) StartSession(spec agent.Spec, by *ledger.Process) (agent.Info, error) {
	if spec.Pinned && spec.Intent == "" {
		return agent.Info{}, errors.New("a pinned session needs an intent (--intent ID)")
	}
	var in *policy.Intent
	if spec.Intent != "" {
		var err error
		if in, err = d.selectable(spec.Intent, by); err != nil {
			return agent.Info{}, err
		}
	}
	s, err := d.sessions.Start(spec)
	if err != nil {
		return agent.Info{}, err
	}
	if in != nil {
		if err := d.sessions.Claim(s, in.ID, in.Shared); err != nil {
			// The root process is waiting for a go-ahead that will never
			// come; the CLI kills it, which ends the session unrecorded.
			d.sessions.Abandon(s)
			return agent.Info{}, err
		}
	}
	d.log.Info("session started", "session", s.ID(), "name", spec.Name, "user", spec.User, "pid", spec.RootPid, "intent", spec.Intent, "pinned", spec.Pinned)
	d.Record(ledger.Change{Event: ledger.EventSessionStart, Intent: spec.Intent, Session: s.Ref(), Process: by,
		Reason: sessionSummary(spec)})
	return s.Info(), nil
}

func sessionSummary(spec agent.Spec) string {
	mode := "selects its own intent"
	switch {
	case spec.Check:
		mode = "runs acceptance checks of " + spec.Intent
	case spec.Pinned:
		mode = "pinned to " + spec.Intent
	}
	return fmt.Sprintf("agent session as %s (uid %d), root pid %d, %s", spec.User, spec.Uid, spec.RootPid, mode)
}

// sessionEnded records the end of a session (its claim is released).
func (d *Daemon) sessionEnded(s *agent.Session) {
	info := s.Info()
	d.log.Info("session ended", "session", s.ID(), "changes", info.Changes, "denials", info.Denials)
	if d.root != nil {
		// Its temporaries outlive no save: removed, and recorded, before
		// the session's end is.
		d.root.SessionEnded(s.ID())
	}
	d.Record(ledger.Change{Event: ledger.EventSessionEnd, Intent: s.Intent(), Session: s.Ref(),
		Reason: fmt.Sprintf("ran %s; %d changes, %d denials", time.Since(info.Started).Round(time.Millisecond), info.Changes, info.Denials)})
}

// IntentInfo returns intent id's name and status.
func (d *Daemon) IntentInfo(id string) (name, status string) {
	if in := d.engine.Snapshot().Intents.Get(id); in != nil {
		return in.Name, string(in.Status)
	}
	return "", ""
}

// Sessions lists the live sessions, then the recently ended ones.
func (d *Daemon) Sessions() []agent.Info { return d.sessions.List() }

// selectable returns intent id if it may be selected now (starting a
// PENDING one), or why not.
func (d *Daemon) selectable(id string, by *ledger.Process) (*policy.Intent, error) {
	snap := d.engine.Snapshot()
	in := snap.Intents.Get(id)
	if in == nil {
		return nil, fmt.Errorf("unknown intent %q: defined intents are %s", id, intentIDs(snap))
	}
	switch in.Status {
	case policy.StatusBlocked:
		return nil, fmt.Errorf("intent %s is BLOCKED: unblock it before selecting it", id)
	case policy.StatusComplete:
		return nil, fmt.Errorf("intent %s is COMPLETE: its work is closed", id)
	case policy.StatusArchived:
		return nil, fmt.Errorf("intent %s is ARCHIVED", id)
	}
	if err := d.startOnSelect(in, by); err != nil {
		return nil, err
	}
	return in, nil
}

// selectInSession selects id for session s only. A pinned session may
// not select; that is refused with EPERM and recorded.
func (d *Daemon) selectInSession(s *agent.Session, id string, by *ledger.Process) error {
	if s.Pinned() {
		reason := fmt.Sprintf("session %s is pinned to %s (intentfs run --intent): it cannot select another intent", s.ID(), s.Intent())
		if id == s.Intent() {
			return nil
		}
		d.Denied(policy.Request{Op: "select", Path: fsnode.ControlDirName + "/active", Intent: s.Intent(),
			Caller: policy.Caller{Pid: by.Pid, Uid: by.Uid, Gid: by.Gid}},
			policy.Decision{Code: "SESSION_PINNED", Reason: reason, Validation: policy.ValidationFail}, by, s.Ref())
		return fmt.Errorf("%s: %w", reason, syscall.EPERM)
	}
	var in *policy.Intent
	if id != "" {
		var err error
		if in, err = d.selectable(id, by); err != nil {
			return err
		}
	}
	shared := in != nil && in.Shared
	prev, err := d.sessions.Select(s, id, shared, func(prev string) error {
		if id != prev && !d.selects.allow(by.Uid, time.Now()) {
			return d.selectRefused(prev, by, s.Ref())
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, agent.ErrClaimed) {
			d.Denied(policy.Request{Op: "select", Path: fsnode.ControlDirName + "/active", Intent: prev,
				Caller: policy.Caller{Pid: by.Pid, Uid: by.Uid, Gid: by.Gid}},
				policy.Decision{Code: "INTENT_CLAIMED", Reason: err.Error(), Validation: policy.ValidationFail}, by, s.Ref())
			return fmt.Errorf("%v: %w", err, syscall.EBUSY)
		}
		return err
	}
	if prev == id {
		return nil
	}
	d.log.Info("session intent selected", "session", s.ID(), "intent", id, "previous", prev, "by_pid", by.Pid)
	d.Record(ledger.Change{Event: ledger.EventSelect, Intent: id, FromIntent: prev, Process: by, Session: s.Ref()})
	return nil
}

// EndSessions kills every agent session of the mount (each session's
// first process, and with it the kernel ends the whole session) and
// waits for their ends to be recorded. It returns how many there were.
// The mount stays: Unmount follows.
func (d *Daemon) EndSessions() int { return d.sessions.EndAll(sessionEndTimeout) }
