package daemon

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/internal/intentcontext"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Active is the intent in force for by.
func (b controlBackend) Active(by *ledger.Process) string { return b.actors.intentFor(by) }

// DeclaredClass returns the mutation class the agent declared.
func (b controlBackend) DeclaredClass() ledger.MutationClass { return b.gov.DeclaredClass() }

// Context builds the context block of id, or of the intent in force for
// by.
func (b controlBackend) Context(id string, by *ledger.Process) ([]byte, error) {
	if id == "" {
		id = b.actors.intentFor(by)
	}
	if id == "" {
		return nil, errors.New("no intent is active; name one")
	}
	// Records still queued belong in the context too.
	if err := b.writer.Flush(); err != nil {
		return nil, err
	}
	return intentcontext.Build(intentcontext.Input{Intents: b.engine.Snapshot().Intents, ID: id, LedgerPath: b.LedgerPath(),
		Source: b.cfg.Source, MapFiles: b.imap.Files(id)})
}

// Lesson records what an agent learned, under the intent in force for it.
func (b controlBackend) Lesson(text string, by *ledger.Process) error {
	id := b.actors.intentFor(by)
	added, err := b.lessons.Add(id, text, time.Now())
	if err != nil {
		return err
	}
	if added {
		var sess *ledger.Session
		if s, err := b.actors.sessionOf(by); err == nil && s != nil {
			sess = s.Ref()
		}
		b.gov.Record(ledger.Change{Event: ledger.EventLesson, Intent: id, Reason: strings.TrimSpace(text), Process: by, Session: sess})
	}
	return nil
}

// IntentList describes every intent on a line, for .intentfs/intents.
func (b controlBackend) IntentList(by *ledger.Process) []byte {
	var out strings.Builder
	active := b.actors.intentFor(by)
	for _, in := range b.engine.Snapshot().Intents.List {
		mark := " "
		if in.ID == active {
			mark = "*"
		}
		fmt.Fprintf(&out, "%s %-10s %-11s %s  scope: %s\n", mark, in.ID, in.Status, in.Name, strings.Join(in.OwnedScope, ", "))
	}
	if out.Len() == 0 {
		return []byte("no intents are defined (.orchestration/active_intents.yaml)\n")
	}
	return []byte(out.String())
}

// DeclareClass sets the mutation class of the agent's next content changes
// (valid until changed); "" stops declaring.
func (b controlBackend) DeclareClass(class string, by *ledger.Process) error {
	c := ledger.MutationClass(class)
	if c != "" && !slices.Contains(ledger.DeclarableClasses(), c) {
		return fmt.Errorf("%q is not a class that can be declared (one of %v, or none)", class, ledger.DeclarableClasses())
	}
	b.gov.declared.Store(&c)
	b.log.Info("mutation class declared", "class", class, "by_pid", by.Pid)
	return nil
}

// InvalidControlWrite records garbage written to a control file.
func (b controlBackend) InvalidControlWrite(file string, data []byte, err error, by *ledger.Process) {
	shown := strings.ToValidUTF8(string(data), "?")
	if len(shown) > 64 {
		shown = shown[:64] + "..."
	}
	reason := fmt.Sprintf("invalid write to .intentfs/%s (%q): %v", file, strings.TrimSpace(shown), err)
	var sess *ledger.Session
	if s, err := b.actors.sessionOf(by); err == nil && s != nil {
		sess = s.Ref()
	}
	b.gov.Denied(policy.Request{Op: "control_write", Path: fsnode.ControlDirName + "/" + file, Intent: b.actors.intentFor(by),
		Caller: policy.Caller{Pid: by.Pid, Uid: by.Uid, Gid: by.Gid}},
		policy.Decision{Code: "INVALID_CONTROL_WRITE", Reason: reason, Validation: policy.ValidationFail}, by, sess)
}

// IntentInfo returns intent id's name and status.
func (b controlBackend) IntentInfo(id string) (name, status string) {
	if in := b.engine.Snapshot().Intents.Get(id); in != nil {
		return in.Name, string(in.Status)
	}
	return "", ""
}

// SessionOf returns the id of by's live session, "" for none.
func (b controlBackend) SessionOf(by *ledger.Process) string {
	if s, err := b.actors.sessionOf(by); err == nil && s != nil {
		return s.ID()
	}
	return ""
}

// decideApproval carries out a human's decision on what waits. Approving
// a scope request adds its paths to the intent's owned_scope in the
// policy file first; if that fails, the request stays pending and the
// error says why.
func (b controlBackend) decideApproval(r control.DecideRequest, by *ledger.Process) ([]approvals.Decision, error) {
	who := deciderName(by)
	p, ok := b.approvals.Get(r.ID)
	if !ok {
		return nil, fmt.Errorf("%d is not pending: it was decided, timed out, or its process ended (see intentfs approvals)", r.ID)
	}
	if p.Kind == approvals.KindScopeRequest && r.Verdict == approvals.VerdictApproved {
		if r.For != 0 || r.ForProcess {
			return nil, errors.New("--for and --process apply to held changes, not to scope requests")
		}
		if err := b.wf.Scope(p.Intent, p.Paths, nil, by); err != nil {
			return nil, fmt.Errorf("adding %s to the owned_scope of %s: %w", strings.Join(p.Paths, ", "), p.Intent, err)
		}
	}
	return b.approvals.Settle(r.ID, r.Verdict, who, by, r.For, r.ForProcess, r.Reason)
}

// deciderName names a person deciding through the CLI.
func deciderName(by *ledger.Process) string {
	if by == nil {
		return "intentfs"
	}
	name := strings.TrimSuffix(strings.TrimPrefix(by.Comm, "intentfs ("), ")")
	if name == "" || name == by.Comm {
		name = fmt.Sprintf("uid %d", by.Uid)
	}
	return fmt.Sprintf("%s (uid %d)", textsafe.Escape(name), by.Uid)
}

// RequestScope files an agent's request for more scope under its intent.
func (b controlBackend) RequestScope(paths []string, why string, by *ledger.Process) (uint64, error) {
	intent := b.actors.intentFor(by)
	if intent == "" {
		return 0, errors.New("no intent is active: select one before asking for more scope")
	}
	if b.engine.Snapshot().Intents.Get(intent) == nil {
		return 0, fmt.Errorf("the active intent %s is not defined in the policy", intent)
	}
	p := approvals.Pending{Intent: intent, Session: b.SessionOf(by), Paths: paths, Why: why, Process: by}
	id, err := b.approvals.Request(by.Uid, p)
	if err != nil {
		if errors.Is(err, approvals.ErrFull) {
			return 0, fmt.Errorf("%w: %w", err, syscall.EBUSY)
		}
		return 0, err
	}
	sess, _ := b.actors.sessionOf(by)
	var ref *ledger.Session
	if sess != nil {
		ref = sess.Ref()
	}
	b.gov.Record(ledger.Change{Event: ledger.EventApproval, Intent: intent, Op: "scope_request", Code: "REQUESTED",
		Reason: fmt.Sprintf("scope request %d for %s: %s", id, strings.Join(paths, ", "), why), Process: by, Session: ref})
	return id, nil
}
