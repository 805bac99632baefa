package history

import (
	"errors"
	"fmt"
	"strings"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
)

// Request says what to revert: one record, or every change of an intent.
type Request struct {
	Record string `json:"record,omitempty"`
	Intent string `json:"intent,omitempty"`
	DryRun bool   `json:"dry_run,omitempty"`
	// Force reverts files that changed since their record too.
	Force bool `json:"force,omitempty"`
}

// revertedRecords returns the ids of the records that revert records
// name as undone.
func revertedRecords(ledgerPath string) (map[string]bool, error) {
	out := map[string]bool{}
	err := ledger.Query(ledgerPath, ledger.Filter{Events: []ledger.Event{ledger.EventRevert}}, func(r *ledger.Record) error {
		if id := r.Gov().RevertOf; id != "" {
			out[id] = true
		}
		return nil
	})
	return out, err
}

func anyUndoable(units []unit) bool {
	for _, u := range units {
		if undoable(u.rec.Gov().Event) {
			return true
		}
	}
	return false
}

// ErrConflicts is returned when files changed since their records and
// Force was not given; the plan lists them.
var ErrConflicts = errors.New("files changed since their records")

// Run plans the revert of the records req names and, unless it is a dry
// run or there are conflicts (without Force), carries it out, recording
// each step with rec. It returns the plan and how many steps were applied.
func Run(source, ledgerPath string, store *objects.Store, req Request, rec func(ledger.Change)) (*Plan, int, error) {
	if (req.Record == "") == (req.Intent == "") {
		return nil, 0, errors.New("name one record id or one intent")
	}
	f := ledger.Filter{ID: req.Record, Intent: req.Intent}
	var recs []*ledger.Record
	err := ledger.Query(ledgerPath, f, func(r *ledger.Record) error {
		if e := r.Gov().Event; ledger.ClassOf(e) != "" {
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if len(recs) == 0 {
		what := "record " + req.Record
		if req.Intent != "" {
			what = "intent " + req.Intent
		}
		return nil, 0, fmt.Errorf("the ledger has no changes of %s to revert", what)
	}
	units := singleUnits(recs)
	if req.Intent != "" {
		units = groupUnits(recs)
	}
	// A change an earlier revert undid is not undone again: its file is
	// as before it, and replaying it would only conflict.
	reverted, err := revertedRecords(ledgerPath)
	if err != nil {
		return nil, 0, err
	}
	var pending []unit
	already := 0
	for _, u := range units {
		if reverted[u.rec.ID] {
			already++
			continue
		}
		pending = append(pending, u)
	}
	if already > 0 && !anyUndoable(pending) {
		return &Plan{AlreadyReverted: already}, 0, nil
	}
	plan := buildUnits(source, store, pending)
	plan.AlreadyReverted = already
	if c := plan.Conflicts(); len(c) > 0 && !req.Force {
		var b strings.Builder
		for _, s := range c {
			fmt.Fprintf(&b, "\n  %s: %s", s.Path, s.Conflict)
		}
		return plan, 0, fmt.Errorf("%w (use --force to revert them anyway):%s", ErrConflicts, b.String())
	}
	if req.DryRun {
		return plan, 0, nil
	}
	n, err := Apply(source, store, plan, rec)
	return plan, n, err
}
