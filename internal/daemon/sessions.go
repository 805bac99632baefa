package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/internal/workflow"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// actors places the process behind each request, in an agent session
// or outside every one, and keeps the intent in force for each: the
// mount's selection for processes outside the sessions, each session's
// own inside it. It carries out selections, starts agent sessions and
// records their ends.
type actors struct {
	log    *slog.Logger
	engine *policy.Engine
	// sessions are the agent sessions (intentfs run) of the mount.
	sessions *agent.Sessions
	// selected is the intent selected for the mount, in force outside
	// every session.
	selected atomic.Pointer[string]
	selMu    sync.Mutex
	selects  *selectLimiter
	// gov records selections and the sessions' starts and ends.
	gov *governor
	// wf starts a PENDING intent that is selected; set once the source
	// is opened.
	wf *workflow.Workflow
	// root is the mount's; nil before the mount.
	root *fsnode.Root
}

// mountIntent returns the intent selected for the mount ("" for none).
func (a *actors) mountIntent() string {
	if p := a.selected.Load(); p != nil {
		return *p
	}
	return ""
}

// of places the process behind a request: inside an agent session
// the session's own intent is in force, outside any the mount's. A
// process that cannot be placed gets no intent.
func (a *actors) of(c *fuse.Caller) fsnode.Actor {
	if c == nil {
		return fsnode.Actor{Intent: a.mountIntent()}
	}
	s, err := a.sessions.Place(c.Pid)
	switch {
	case err != nil:
		return fsnode.Actor{Unplaced: err}
	case s == nil:
		return fsnode.Actor{Intent: a.mountIntent()}
	}
	return fsnode.Actor{Intent: s.Intent(), Session: s.Ref(), Versions: s.Versions()}
}

// sessionOf returns the session by's process belongs to (nil for none, or
// for nil by).
func (a *actors) sessionOf(by *ledger.Process) (*agent.Session, error) {
	if by == nil {
		return nil, nil
	}
	return a.sessions.Place(by.Pid)
}

// intentFor returns the intent in force for by, "" when none is or when
// by cannot be placed.
func (a *actors) intentFor(by *ledger.Process) string {
	s, err := a.sessionOf(by)
	switch {
	case err != nil:
		return ""
	case s != nil:
		return s.Intent()
	}
	return a.mountIntent()
}

// start registers the agent session whose root process is
// spec.RootPid, selects its intent and claims it. Only the mount's owner
// reaches this (the control socket); the session's processes start once
// it returns.
func (a *actors) start(spec agent.Spec, by *ledger.Process) (agent.Info, error) {
	if spec.Pinned && spec.Intent == "" {
		return agent.Info{}, errors.New("a pinned session needs an intent (--intent ID)")
	}
	var in *policy.Intent
	if spec.Intent != "" {
		var err error
		if in, err = a.selectable(spec.Intent, by); err != nil {
			return agent.Info{}, err
		}
	}
	s, err := a.sessions.Start(spec)
	if err != nil {
		return agent.Info{}, err
	}
	if in != nil {
		if err := a.sessions.Claim(s, in.ID, in.Shared); err != nil {
			// The root process is waiting for a go-ahead that will never
			// come; the CLI kills it, which ends the session unrecorded.
			a.sessions.Abandon(s)
			return agent.Info{}, err
		}
	}
	a.log.Info("session started", "session", s.ID(), "name", spec.Name, "user", spec.User, "pid", spec.RootPid, "intent", spec.Intent, "pinned", spec.Pinned)
	a.gov.Record(ledger.Change{Event: ledger.EventSessionStart, Intent: spec.Intent, Session: s.Ref(), Process: by,
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

// ending records what a session changed and has not yet recorded, while
// it is still counted for the session and before its end is recorded:
// on the cached data path its writers record once their writes pause,
// which its last command does not wait for.
func (a *actors) ending(s *agent.Session) {
	if a.root == nil {
		return
	}
	a.root.SettleSessionWrites(s.ID())
	// Its temporaries outlive no save: removed, and recorded, before the
	// session's end is.
	a.root.SessionEnded(s.ID())
}

// ended records the end of a session (its claim is released).
func (a *actors) ended(s *agent.Session) {
	info := s.Info()
	a.log.Info("session ended", "session", s.ID(), "changes", info.Changes, "denials", info.Denials)
	a.gov.Record(ledger.Change{Event: ledger.EventSessionEnd, Intent: s.Intent(), Session: s.Ref(),
		Reason: fmt.Sprintf("ran %s; %d changes, %d denials", time.Since(info.Started).Round(time.Millisecond), info.Changes, info.Denials)})
}

// list lists the live sessions, then the recently ended ones.
func (a *actors) list() []agent.Info { return a.sessions.List() }

// selectable returns intent id if it may be selected now (starting a
// PENDING one), or why not.
func (a *actors) selectable(id string, by *ledger.Process) (*policy.Intent, error) {
	snap := a.engine.Snapshot()
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
	if err := a.startOnSelect(in, by); err != nil {
		return nil, err
	}
	return in, nil
}

// selectInSession selects id for session s only. A pinned session may
// not select; that is refused with EPERM and recorded.
func (a *actors) selectInSession(s *agent.Session, id string, by *ledger.Process) error {
	if s.Pinned() {
		reason := fmt.Sprintf("session %s is pinned to %s (intentfs run --intent): it cannot select another intent", s.ID(), s.Intent())
		if id == s.Intent() {
			return nil
		}
		a.gov.Denied(policy.Request{Op: "select", Path: fsnode.ControlDirName + "/active", Intent: s.Intent(),
			Caller: policy.Caller{Pid: by.Pid, Uid: by.Uid, Gid: by.Gid}},
			policy.Decision{Code: "SESSION_PINNED", Reason: reason, Validation: policy.ValidationFail}, by, s.Ref())
		return fmt.Errorf("%s: %w", reason, syscall.EPERM)
	}
	var in *policy.Intent
	if id != "" {
		var err error
		if in, err = a.selectable(id, by); err != nil {
			return err
		}
	}
	shared := in != nil && in.Shared
	prev, err := a.sessions.Select(s, id, shared, func(prev string) error {
		if id != prev && !a.selects.allow(by.Uid, time.Now()) {
			return a.selectRefused(prev, by, s.Ref())
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, agent.ErrClaimed) {
			a.gov.Denied(policy.Request{Op: "select", Path: fsnode.ControlDirName + "/active", Intent: prev,
				Caller: policy.Caller{Pid: by.Pid, Uid: by.Uid, Gid: by.Gid}},
				policy.Decision{Code: "INTENT_CLAIMED", Reason: err.Error(), Validation: policy.ValidationFail}, by, s.Ref())
			return fmt.Errorf("%v: %w", err, syscall.EBUSY)
		}
		return err
	}
	if prev == id {
		return nil
	}
	a.log.Info("session intent selected", "session", s.ID(), "intent", id, "previous", prev, "by_pid", by.Pid)
	a.gov.Record(ledger.Change{Event: ledger.EventSelect, Intent: id, FromIntent: prev, Process: by, Session: s.Ref()})
	return nil
}

// endAll kills every agent session of the mount (each session's
// first process, and with it the kernel ends the whole session) and
// waits for their ends to be recorded. It returns how many there were.
// The mount stays: Unmount follows.
func (a *actors) endAll() int { return a.sessions.EndAll(sessionEndTimeout) }

// selectIntent makes id the active intent, "" for none: for by's session when
// by is a session's process, else for the mount. An unknown id, or an
// intent that is BLOCKED, COMPLETE or ARCHIVED, is refused; so is any
// select by a process that cannot be placed.
func (a *actors) selectIntent(id string, by *ledger.Process) error {
	s, err := a.sessionOf(by)
	if err != nil {
		return fmt.Errorf("%v: %w", err, syscall.EPERM)
	}
	if s != nil {
		return a.selectInSession(s, id, by)
	}
	if id != "" {
		if _, err := a.selectable(id, by); err != nil {
			return err
		}
	}
	a.selMu.Lock()
	prev := a.mountIntent()
	if id == prev {
		// Nothing changes, so nothing is recorded: repeating a select
		// costs the ledger nothing.
		a.selMu.Unlock()
		return nil
	}
	if by != nil && !a.selects.allow(by.Uid, time.Now()) {
		a.selMu.Unlock()
		return a.selectRefused(prev, by, nil)
	}
	a.selected.Store(&id)
	a.selMu.Unlock()
	c := ledger.Change{Event: ledger.EventSelect, Intent: id, FromIntent: prev, Process: by}
	if held := (control.Status{OpenWriters: openWriters(a.root)}).HeldBy(id); len(held) > 0 {
		// Handles keep the intent they were opened under; say so where the
		// selection is recorded.
		c.Reason = heldWritersReason(held)
		a.log.Warn("files stay open for writing under other intents", "intent", id, "count", len(held))
	}
	a.log.Info("intent selected", "intent", id, "previous", prev, "by_pid", by.Pid, "by", by.Comm)
	a.gov.Record(c)
	return nil
}

// selectRefused counts a select over the uid's allowance (see
// selectlimit.go) as a denial and returns an error that is EBUSY, which
// the control file returns to the writer.
func (a *actors) selectRefused(active string, by *ledger.Process, sess *ledger.Session) error {
	reason := fmt.Sprintf("too many intent selections by uid %d: at most %d at once, then %d a second", by.Uid, selectBurst, selectsPerSecond)
	a.gov.Denied(policy.Request{Op: "select", Path: fsnode.ControlDirName + "/active", Intent: active,
		Caller: policy.Caller{Pid: by.Pid, Uid: by.Uid, Gid: by.Gid}},
		policy.Decision{Code: "SELECT_RATE_LIMITED", Reason: reason, Validation: policy.ValidationFail}, by, sess)
	return fmt.Errorf("%s; the intent stays %s, try again in a moment: %w", reason, activeName(active), syscall.EBUSY)
}

// activeName names the active intent in a message.
func activeName(id string) string {
	if id == "" {
		return "none"
	}
	return id
}

func intentIDs(s *policy.Snapshot) string {
	var ids []string
	for _, in := range s.Intents.List {
		ids = append(ids, in.ID)
	}
	if len(ids) == 0 {
		return "none (the policy file lists no intents)"
	}
	return strings.Join(ids, ", ")
}

// openWriters lists the files open for writing through the mount.
func openWriters(root *fsnode.Root) []control.OpenWriter {
	if root == nil {
		return nil
	}
	var out []control.OpenWriter
	for _, w := range root.OpenWriters() {
		out = append(out, control.OpenWriter{Path: w.Path, Intent: w.Intent, Pid: w.Pid})
	}
	return out
}

// maxHeldListed bounds the paths a select record names.
const maxHeldListed = 10

func heldWritersReason(held []control.OpenWriter) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d file(s) stay open for writing under other intents; their changes are recorded under those until closed:", len(held))
	for i, w := range held {
		if i == maxHeldListed {
			fmt.Fprintf(&b, " and %d more", len(held)-i)
			break
		}
		fmt.Fprintf(&b, " %s (%s, pid %d)", textsafe.Escape(w.Path), w.Intent, w.Pid)
	}
	return b.String()
}

// startOnSelect moves a PENDING intent to IN_PROGRESS when it is selected.
func (a *actors) startOnSelect(in *policy.Intent, by *ledger.Process) error {
	if in.Status != policy.StatusPending {
		return nil
	}
	who := by.Comm
	if who == "" {
		who = fmt.Sprintf("pid %d", by.Pid)
	}
	_, err := a.wf.Transition(in.ID, policy.StatusInProgress, "selected by "+who, by)
	return err
}
