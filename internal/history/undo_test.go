package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// TestRunPlansTheInverse: each recorded change of an intent plans its
// inverse, newest first, against the tree as the steps before it leave it, and a file that
// is no longer as the ledger left it is a conflict, named.
func TestRunPlansTheInverse(t *testing.T) {
	const one, two = "one\n", "two\n"
	// step is what a planned step must be; contents stand for their
	// hashes, and conflict is part of the step's conflict ("" for none).
	type step struct {
		action, path, to string
		hash, moved      string
		conflict, note   string
	}
	tests := []struct {
		name    string
		disk    map[string]string // the source when planning
		kept    []string          // the contents in the object store
		changes []ledger.Change   // the records, oldest first
		want    []step            // newest first
	}{
		{
			name:    "a creation is removed",
			disk:    map[string]string{"a": one},
			changes: []ledger.Change{{Event: ledger.EventCreate, Path: "a", PostHash: one}},
			want:    []step{{action: "remove", path: "a"}},
		},
		{
			name:    "a created file changed since",
			disk:    map[string]string{"a": two},
			changes: []ledger.Change{{Event: ledger.EventCreate, Path: "a", PostHash: one}},
			want:    []step{{action: "remove", path: "a", conflict: "changed since the record"}},
		},
		{
			name:    "a created file that is gone",
			changes: []ledger.Change{{Event: ledger.EventCreate, Path: "a", PostHash: one}},
			want:    []step{{action: "remove", path: "a", conflict: "no longer exists"}},
		},
		{
			name:    "a write is restored",
			disk:    map[string]string{"a": two},
			kept:    []string{one},
			changes: []ledger.Change{{Event: ledger.EventWrite, Path: "a", PreHash: one, PostHash: two}},
			want:    []step{{action: "restore", path: "a", hash: one}},
		},
		{
			name:    "a write whose old bytes were not kept",
			disk:    map[string]string{"a": two},
			changes: []ledger.Change{{Event: ledger.EventWrite, Path: "a", PreHash: one, PostHash: two}},
			want:    []step{{action: "restore", path: "a", hash: one, conflict: "not in the object store"}},
		},
		{
			name:    "a deletion is recreated",
			kept:    []string{one},
			changes: []ledger.Change{{Event: ledger.EventDelete, Path: "a", PreHash: one}},
			want:    []step{{action: "recreate", path: "a", hash: one}},
		},
		{
			name:    "a deleted file that exists again",
			disk:    map[string]string{"a": two},
			kept:    []string{one},
			changes: []ledger.Change{{Event: ledger.EventDelete, Path: "a", PreHash: one}},
			want:    []step{{action: "recreate", path: "a", hash: one, conflict: "exists there again"}},
		},
		{
			name:    "a move goes back",
			disk:    map[string]string{"b": one},
			changes: []ledger.Change{{Event: ledger.EventRename, Path: "b", FromPath: "a", PostHash: one}},
			want:    []step{{action: "move-back", path: "b", to: "a", moved: one}},
		},
		{
			name:    "a move whose old name is taken again",
			disk:    map[string]string{"a": two, "b": one},
			changes: []ledger.Change{{Event: ledger.EventRename, Path: "b", FromPath: "a", PostHash: one}},
			want:    []step{{action: "move-back", path: "b", to: "a", moved: one, conflict: "a exists again"}},
		},
		{
			name:    "a rename over a file brings the replaced file back",
			disk:    map[string]string{"a": two},
			kept:    []string{one},
			changes: []ledger.Change{{Event: ledger.EventRename, Path: "a", FromPath: "tmp", PreHash: one, PostHash: two}},
			want:    []step{{action: "move-back", path: "a", to: "tmp", moved: two, hash: one}},
		},
		{
			name: "a creation then a write: undone newest first, without conflict",
			disk: map[string]string{"a": two},
			kept: []string{one},
			changes: []ledger.Change{
				{Event: ledger.EventCreate, Path: "a", PostHash: one},
				{Event: ledger.EventWrite, Path: "a", PreHash: one, PostHash: two},
			},
			want: []step{{action: "restore", path: "a", hash: one}, {action: "remove", path: "a"}},
		},
		{
			name: "directories",
			changes: []ledger.Change{
				{Event: ledger.EventMkdir, Path: "d"},
				{Event: ledger.EventRmdir, Path: "e"},
			},
			want: []step{{action: "mkdir", path: "e"}, {action: "rmdir", path: "d"}},
		},
		{
			name:    "metadata is not reverted, and the plan says so",
			disk:    map[string]string{"a": one},
			changes: []ledger.Change{{Event: ledger.EventChmod, Path: "a", Mode: "0755"}},
			want:    []step{{action: "skip", path: "a", note: "not reverted"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			for rel, content := range tt.disk {
				f.write(rel, content)
			}
			for _, content := range tt.kept {
				f.keep(content)
			}
			changes := make([]ledger.Change, len(tt.changes))
			for i, c := range tt.changes {
				c.PreHash, c.PostHash, c.Intent = hashOf(t, c.PreHash), hashOf(t, c.PostHash), "INT-001"
				changes[i] = c
			}
			recs := f.record(changes...)
			// A dry run with Force plans every step, conflicts included,
			// and applies none.
			plan, applied, err := Run(f.src, f.source().Ledger, f.store, Request{Intent: "INT-001", DryRun: true, Force: true}, func(ledger.Change) {
				t.Error("a dry run recorded a step")
			})
			if err != nil || applied != 0 {
				t.Fatalf("dry run: %d applied, %v", applied, err)
			}
			if len(plan.Steps) != len(tt.want) {
				t.Fatalf("%d steps, want %d: %+v", len(plan.Steps), len(tt.want), plan.Steps)
			}
			wantConflicts := 0
			for i, w := range tt.want {
				if w.conflict != "" {
					wantConflicts++
				}
				s, undone := plan.Steps[i], recs[len(recs)-1-i]
				if s.Record != undone.ID || s.Intent != "INT-001" {
					t.Errorf("step %d undoes %s of %q, want %s of INT-001", i, s.Record, s.Intent, undone.ID)
				}
				got := step{action: s.Action, path: s.Path, to: s.To, hash: s.Hash, moved: s.Moved}
				exp := step{action: w.action, path: w.path, to: w.to, hash: hashOf(t, w.hash), moved: hashOf(t, w.moved)}
				if got != exp {
					t.Errorf("step %d = %+v, want %+v", i, got, exp)
				}
				if (w.conflict == "") != (s.Conflict == "") || !strings.Contains(s.Conflict, w.conflict) {
					t.Errorf("step %d conflict %q, want %q", i, s.Conflict, w.conflict)
				}
				if !strings.Contains(s.Note, w.note) {
					t.Errorf("step %d note %q, want %q", i, s.Note, w.note)
				}
			}
			if c := plan.Conflicts(); len(c) != wantConflicts {
				t.Errorf("Conflicts() lists %d, want %d", len(c), wantConflicts)
			}
		})
	}
}

// TestRunRestoresTheTree: a revert of an intent puts every file back as it
// was and records each step under that intent, naming the record undone.
func TestRunRestoresTheTree(t *testing.T) {
	const one, two = "one\n", "two\n"
	f := newFixture(t)
	f.write("a", two)
	f.write("n", two)
	f.keep(one)
	recs := f.record(
		ledger.Change{Event: ledger.EventWrite, Path: "a", PreHash: hashOf(t, one), PostHash: hashOf(t, two), Intent: "INT-001"},
		ledger.Change{Event: ledger.EventDelete, Path: "c", PreHash: hashOf(t, one), Intent: "INT-001"},
		ledger.Change{Event: ledger.EventCreate, Path: "n", PostHash: hashOf(t, two), Intent: "INT-001"},
	)
	var recorded []ledger.Change
	plan, applied, err := Run(f.src, f.source().Ledger, f.store, Request{Intent: "INT-001"}, func(c ledger.Change) { recorded = append(recorded, c) })
	if err != nil || applied != 3 {
		t.Fatalf("run: %d of %d steps applied: %v", applied, len(plan.Steps), err)
	}
	for rel, want := range map[string]string{"a": one, "c": one} {
		if b, err := os.ReadFile(filepath.Join(f.src, rel)); err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", rel, b, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(f.src, "n")); !os.IsNotExist(err) {
		t.Errorf("n, created by the intent, still exists: %v", err)
	}
	undone := map[string]bool{}
	for _, c := range recorded {
		if c.Event != ledger.EventRevert || c.Intent != "INT-001" {
			t.Errorf("recorded %s under %q, want revert under INT-001", c.Event, c.Intent)
		}
		undone[c.RevertOf] = true
	}
	for _, r := range recs {
		if !undone[r.ID] {
			t.Errorf("no revert record undoes %s (%s)", r.ID, r.Path())
		}
	}
}
