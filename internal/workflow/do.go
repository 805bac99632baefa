package workflow

import (
	"fmt"

	"github.com/intentfs/intentfs/internal/policyedit"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Request is one lifecycle command, as the CLI sends it to a daemon or
// runs it on an unmounted source.
type Request struct {
	// Action is new, start, block, unblock, complete, archive or scope.
	Action string                `json:"action"`
	ID     string                `json:"id"`
	Reason string                `json:"reason,omitempty"`
	Add    []string              `json:"add,omitempty"`
	Remove []string              `json:"remove,omitempty"`
	New    *policyedit.NewIntent `json:"new,omitempty"`
	Force  bool                  `json:"force,omitempty"`
	// Results are the acceptance checks the CLI ran, for complete.
	Results []CheckResult `json:"results,omitempty"`
}

// Do carries out r.
func (w *Workflow) Do(r Request, by *ledger.Process) error {
	switch r.Action {
	case "new":
		if r.New == nil {
			return fmt.Errorf("new: no intent given")
		}
		return w.Create(*r.New, by)
	case "start":
		_, err := w.Transition(r.ID, policy.StatusInProgress, r.Reason, by)
		return err
	case "unblock":
		in, err := w.Load()
		if err != nil {
			return err
		}
		if it := in.Get(r.ID); it != nil && it.Status != policy.StatusBlocked {
			return fmt.Errorf("intent %s is %s, not BLOCKED: nothing to unblock", r.ID, it.Status)
		}
		_, err = w.Transition(r.ID, policy.StatusInProgress, r.Reason, by)
		return err
	case "block":
		_, err := w.Transition(r.ID, policy.StatusBlocked, r.Reason, by)
		return err
	case "archive":
		_, err := w.Transition(r.ID, policy.StatusArchived, r.Reason, by)
		return err
	case "complete":
		return w.Complete(r.ID, r.Results, r.Force, by)
	case "scope":
		if len(r.Add)+len(r.Remove) == 0 {
			return fmt.Errorf("scope: give --add or --remove")
		}
		return w.Scope(r.ID, r.Add, r.Remove, by)
	}
	return fmt.Errorf("unknown action %q", r.Action)
}
