// Package workflow carries out the intent lifecycle on a source directory:
// creating intents, moving them through their states, changing their
// scope, and completing them against their acceptance checks. Each step is
// written back to the policy file and recorded in the ledger. The daemon
// runs it for a mounted source; the CLI runs it directly for one that is
// not mounted.
package workflow

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/intentfs/intentfs/internal/policyedit"
	"github.com/intentfs/intentfs/internal/sidecar"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Workflow acts on one source directory.
type Workflow struct {
	Source string
	// Record appends a change to the source's ledger.
	Record func(ledger.Change)
	// Lessons receives what failed acceptance checks teach; may be nil.
	Lessons *sidecar.Lessons
	// Changed is called after the policy file was rewritten (the daemon
	// reloads at once); may be nil.
	Changed func()
}

// PolicyPath is the policy file of the source.
func (w *Workflow) PolicyPath() string { return filepath.Join(w.Source, policy.IntentsFile) }

// Load reads the current policy.
func (w *Workflow) Load() (*policy.Intents, error) {
	in, _, err := policy.LoadIntents(w.PolicyPath())
	return in, err
}

func (w *Workflow) changed() {
	if w.Changed != nil {
		w.Changed()
	}
}

// Transition moves intent id to status to, as the lifecycle allows, and
// records it. It returns the status the intent had.
func (w *Workflow) Transition(id string, to policy.Status, reason string, by *ledger.Process) (policy.Status, error) {
	var from policy.Status
	err := policyedit.UpdateFile(w.PolicyPath(), func(data []byte) ([]byte, error) {
		in, _, err := policy.ParseIntents(w.PolicyPath(), data)
		if err != nil {
			return nil, err
		}
		it := in.Get(id)
		if it == nil {
			return nil, fmt.Errorf("unknown intent %q", id)
		}
		from = it.Status
		if err := policy.CheckTransition(id, from, to); err != nil {
			return nil, err
		}
		return policyedit.ApplyChange(w.PolicyPath(), data, policyedit.IntentChange{ID: id, Status: to})
	})
	if err != nil {
		return from, err
	}
	w.changed()
	w.Record(ledger.Change{Event: ledger.EventTransition, Intent: id, From: string(from), To: string(to), Reason: reason, Process: by, Time: time.Now()})
	return from, nil
}

// Create appends a new PENDING intent and records its creation.
func (w *Workflow) Create(n policyedit.NewIntent, by *ledger.Process) error {
	err := policyedit.UpdateFile(w.PolicyPath(), func(data []byte) ([]byte, error) {
		return policyedit.AppendIntent(w.PolicyPath(), data, n)
	})
	if err != nil {
		return err
	}
	w.changed()
	w.Record(ledger.Change{Event: ledger.EventTransition, Intent: n.ID, To: string(policy.StatusPending),
		Reason: "created: " + n.Name, Process: by, Time: time.Now()})
	return nil
}

// Scope adds and removes owned_scope patterns; the version is bumped and
// a child's scope must stay within its parent's.
func (w *Workflow) Scope(id string, add, remove []string, by *ledger.Process) error {
	err := policyedit.UpdateFile(w.PolicyPath(), func(data []byte) ([]byte, error) {
		return policyedit.ApplyChange(w.PolicyPath(), data, policyedit.IntentChange{ID: id, AddScope: add, RemoveScope: remove})
	})
	if err != nil {
		return err
	}
	w.changed()
	var parts []string
	if len(add) > 0 {
		parts = append(parts, "added "+strings.Join(add, ", "))
	}
	if len(remove) > 0 {
		parts = append(parts, "removed "+strings.Join(remove, ", "))
	}
	w.Record(ledger.Change{Event: ledger.EventScope, Intent: id, Reason: strings.Join(parts, "; "), Process: by, Time: time.Now()})
	return nil
}

// Complete moves id to COMPLETE when every acceptance check passed (or
// force is set, which the ledger says). Otherwise the intent stays
// IN_PROGRESS, each failure becomes a lesson, and an error lists them.
func (w *Workflow) Complete(id string, results []CheckResult, force bool, by *ledger.Process) error {
	var failed []CheckResult
	ran := 0
	for _, r := range results {
		if r.Check != "" {
			ran++
			if !r.Passed {
				failed = append(failed, r)
			}
		}
	}
	switch {
	case force:
		_, err := w.Transition(id, policy.StatusComplete, fmt.Sprintf("forced: acceptance checks skipped (%d of %d would have failed)", len(failed), ran), by)
		return err
	case len(failed) == 0:
		_, err := w.Transition(id, policy.StatusComplete, fmt.Sprintf("all %d acceptance checks passed", ran), by)
		return err
	}
	now := time.Now()
	for _, f := range failed {
		text := fmt.Sprintf("Acceptance check failed for %q: `%s` exited %d. %s", f.Text, f.Check, f.ExitCode, lastLine(f.Output))
		if w.Lessons != nil {
			if added, err := w.Lessons.Add(id, text, now); err == nil && added {
				w.Record(ledger.Change{Event: ledger.EventLesson, Intent: id, Reason: text, Process: by, Time: now})
			}
		}
	}
	return fmt.Errorf("%d of %d acceptance checks failed; %s stays IN_PROGRESS (the failures are recorded as lessons)", len(failed), ran, id)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	if l == "" {
		return ""
	}
	return "Last output: " + l
}
