package daemon

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/intentcontext"
	"github.com/intentfs/intentfs/internal/workflow"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// IntentOp carries out a lifecycle command; the policy is reloaded at once.
func (d *Daemon) IntentOp(r workflow.Request, by *ledger.Process) error {
	return d.wf.Do(r, by)
}

// Context builds the context block of id, or of the intent in force for
// by.
func (d *Daemon) Context(id string, by *ledger.Process) ([]byte, error) {
	if id == "" {
		id = d.intentFor(by)
	}
	if id == "" {
		return nil, errors.New("no intent is active; name one")
	}
	// Records still queued belong in the context too.
	if err := d.writer.Flush(); err != nil {
		return nil, err
	}
	return intentcontext.Build(intentcontext.Input{Intents: d.engine.Snapshot().Intents, ID: id, LedgerPath: d.LedgerPath(),
		Source: d.cfg.Source, MapFiles: d.imap.Files(id)})
}

// Lesson records what an agent learned, under the intent in force for it.
func (d *Daemon) Lesson(text string, by *ledger.Process) error {
	id := d.intentFor(by)
	added, err := d.lessons.Add(id, text, time.Now())
	if err != nil {
		return err
	}
	if added {
		var sess *ledger.Session
		if s, err := d.sessionOf(by); err == nil && s != nil {
			sess = s.Ref()
		}
		d.Record(ledger.Change{Event: ledger.EventLesson, Intent: id, Reason: strings.TrimSpace(text), Process: by, Session: sess})
	}
	return nil
}

// IntentList describes every intent on a line, for .intentfs/intents.
func (d *Daemon) IntentList(by *ledger.Process) []byte {
	var b strings.Builder
	active := d.intentFor(by)
	for _, in := range d.engine.Snapshot().Intents.List {
		mark := " "
		if in.ID == active {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %-10s %-11s %s  scope: %s\n", mark, in.ID, in.Status, in.Name, strings.Join(in.OwnedScope, ", "))
	}
	if b.Len() == 0 {
		return []byte("no intents are defined (.orchestration/active_intents.yaml)\n")
	}
	return []byte(b.String())
}

// startOnSelect moves a PENDING intent to IN_PROGRESS when it is selected.
func (d *Daemon) startOnSelect(in *policy.Intent, by *ledger.Process) error {
	if in.Status != policy.StatusPending {
		return nil
	}
	who := by.Comm
	if who == "" {
		who = fmt.Sprintf("pid %d", by.Pid)
	}
	_, err := d.wf.Transition(in.ID, policy.StatusInProgress, "selected by "+who, by)
	return err
}

// mapChange keeps intent_map.md in step with a recorded change.
func (d *Daemon) mapChange(c ledger.Change) {
	if c.Intent == "" || c.Validation != string(policy.ValidationPass) {
		return
	}
	name := ""
	if in := d.engine.Snapshot().Intents.Get(c.Intent); in != nil {
		name = in.Name
	}
	switch c.Event {
	case ledger.EventCreate, ledger.EventSymlink, ledger.EventLink, ledger.EventMknod:
		d.imap.Touch(c.Intent, name, c.Path, false, c.Time)
	case ledger.EventWrite, ledger.EventTruncate:
		d.imap.Touch(c.Intent, name, c.Path, true, c.Time)
	case ledger.EventRename:
		d.imap.Move(c.FromPath, c.Path)
		d.imap.Touch(c.Intent, name, c.Path, c.PreHash != "", c.Time)
	case ledger.EventDelete, ledger.EventRmdir:
		d.imap.Remove(c.Path)
	}
}

// maxDeniedDirs bounds the directories remembered for lessons.
const maxDeniedDirs = 4096

// lessonOnDenial records a lesson the first time an intent is denied a
// path outside its scope. Denials are grouped by directory, so a denied
// `tar -x` of a thousand files teaches one lesson, not a thousand.
func (d *Daemon) lessonOnDenial(req policy.Request, dec policy.Decision) {
	if dec.Code != policy.CodeOutOfScope || req.Intent == "" {
		return
	}
	where := path.Dir(dec.Path)
	key := req.Intent + "\x00" + where
	d.lessonMu.Lock()
	if len(d.deniedDirs) >= maxDeniedDirs {
		// Bounded: forgetting only risks a lesson the file already has,
		// which Lessons.Add does not write twice.
		clear(d.deniedDirs)
	}
	seen := d.deniedDirs[key]
	d.deniedDirs[key] = true
	d.lessonMu.Unlock()
	if seen {
		return
	}
	target := "`" + dec.Path + "`"
	if where != "." {
		target += " (in `" + where + "/`)"
	}
	scope := ""
	if in := d.engine.Snapshot().Intents.Get(req.Intent); in != nil {
		scope = strings.Join(in.OwnedScope, ", ")
	}
	text := fmt.Sprintf("Changing %s is outside this intent's owned_scope (%s): %s was denied. Stay in scope, or ask for the scope to be widened or for another intent.", target, scope, req.Op)
	if _, err := d.lessons.Add(req.Intent, text, time.Now()); err != nil {
		d.log.Error("recording a lesson failed", "err", err)
	}
}

// DeclareClass sets the mutation class of the agent's next content changes
// (valid until changed); "" stops declaring.
func (d *Daemon) DeclareClass(class string, by *ledger.Process) error {
	c := ledger.MutationClass(class)
	if c != "" && !slices.Contains(ledger.DeclarableClasses(), c) {
		return fmt.Errorf("%q is not a class that can be declared (one of %v, or none)", class, ledger.DeclarableClasses())
	}
	d.declared.Store(&c)
	d.log.Info("mutation class declared", "class", class, "by_pid", by.Pid)
	return nil
}

// LedgerErr says why the ledger cannot commit (nil while it can).
func (d *Daemon) LedgerErr() error { return d.writer.Err() }

// DeclaredClass returns the declared mutation class.
func (d *Daemon) DeclaredClass() ledger.MutationClass {
	if p := d.declared.Load(); p != nil {
		return *p
	}
	return ""
}

// Revert undoes recorded changes directly in the source, as the human
// who asked; each step is recorded under the intent of the record it
// undoes.
func (d *Daemon) Revert(r history.Request, by *ledger.Process) (*history.Plan, int, error) {
	return d.opened.Revert(r, by)
}
