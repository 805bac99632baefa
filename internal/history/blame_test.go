package history

import (
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// TestBlame: each line of a file is attributed to the record that last
// wrote it, across renames, and lines no record explains have none.
func TestBlame(t *testing.T) {
	const (
		v0 = "old\n"
		v1 = "a\nb\n"
		v2 = "a\nB\nc\n"
	)
	// change is a record of the test: contents stand for their hashes.
	type change struct {
		event     ledger.Event
		path, src string // src: a rename's old name
		pre, post string
		intent    string
	}
	// line is a line of the blame: its text and the intent of its record
	// ("" for no record).
	type line struct{ text, intent string }
	tests := []struct {
		name    string
		kept    []string // versions in the object store
		changes []change
		file    string // the blamed file
		disk    string // its content now
		want    []line
	}{
		{
			name: "each line to its last writer",
			kept: []string{v1},
			changes: []change{
				{event: ledger.EventCreate, path: "f", post: v1, intent: "INT-001"},
				{event: ledger.EventWrite, path: "f", pre: v1, post: v2, intent: "INT-002"},
			},
			file: "f", disk: v2,
			want: []line{{"a", "INT-001"}, {"B", "INT-002"}, {"c", "INT-002"}},
		},
		{
			name: "an edit outside the mount belongs to no record",
			kept: []string{v1, v2},
			changes: []change{
				{event: ledger.EventCreate, path: "f", post: v1, intent: "INT-001"},
				{event: ledger.EventWrite, path: "f", pre: v1, post: v2, intent: "INT-002"},
			},
			file: "f", disk: v2 + "d\n",
			want: []line{{"a", "INT-001"}, {"B", "INT-002"}, {"c", "INT-002"}, {"d", ""}},
		},
		{
			name: "the version before the ledger belongs to no record",
			kept: []string{v0},
			changes: []change{
				{event: ledger.EventWrite, path: "f", pre: v0, post: v0 + "new\n", intent: "INT-001"},
			},
			file: "f", disk: v0 + "new\n",
			want: []line{{"old", ""}, {"new", "INT-001"}},
		},
		{
			name: "a move keeps the history",
			kept: []string{v1, v2},
			changes: []change{
				{event: ledger.EventCreate, path: "f", post: v1, intent: "INT-001"},
				{event: ledger.EventWrite, path: "f", pre: v1, post: v2, intent: "INT-002"},
				{event: ledger.EventRename, path: "g", src: "f", post: v2, intent: "INT-003"},
			},
			file: "g", disk: v2,
			want: []line{{"a", "INT-001"}, {"B", "INT-002"}, {"c", "INT-002"}},
		},
		{
			name: "a deletion ends the history of a name",
			kept: []string{v1},
			changes: []change{
				{event: ledger.EventCreate, path: "f", post: v1, intent: "INT-001"},
				{event: ledger.EventDelete, path: "f", pre: v1, intent: "INT-001"},
				{event: ledger.EventCreate, path: "f", post: v1, intent: "INT-002"},
			},
			file: "f", disk: v1,
			want: []line{{"a", "INT-002"}, {"b", "INT-002"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			for _, v := range tt.kept {
				f.keep(v)
			}
			f.write(tt.file, tt.disk)
			changes := make([]ledger.Change, len(tt.changes))
			for i, c := range tt.changes {
				changes[i] = ledger.Change{Event: c.event, Path: c.path, FromPath: c.src, PreHash: hashOf(t, c.pre),
					PostHash: hashOf(t, c.post), Intent: c.intent, Process: &ledger.Process{Pid: 7, Comm: "sh"}}
			}
			f.record(changes...)
			got, err := f.source().Blame(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d lines, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Line != i+1 || g.Text != w.text || g.Intent != w.intent || (g.Record == "") != (w.intent == "") {
					t.Errorf("line %d = %d %q by %q (record %q), want %q by %q", i+1, g.Line, g.Text, g.Intent, g.Record, w.text, w.intent)
				}
				if g.Record != "" && g.Process != "sh[7]" {
					t.Errorf("line %d by process %q, want sh[7]", i+1, g.Process)
				}
			}
		})
	}
}

// TestBlameCreditsAcceptedLinesToTheHuman: lines a person accepted
// (intentfs accept) after editing outside the mount are theirs; lines a
// record still explains keep it, even when that record's version is gone.
func TestBlameCreditsAcceptedLinesToTheHuman(t *testing.T) {
	const (
		v1 = "a\nb\n"
		v2 = "a\nb\nagent\n" // its bytes are gone: overwritten outside the mount
		v3 = "a\nhuman\nb\nagent\n"
	)
	f := newFixture(t)
	f.keep(v1)
	f.write("f", v3)
	proc := &ledger.Process{Pid: 7, Comm: "sh"}
	f.record(
		ledger.Change{Event: ledger.EventCreate, Path: "f", PostHash: hashOf(t, v1), Lines: 2, Intent: "INT-001", Process: proc},
		ledger.Change{Event: ledger.EventWrite, Path: "f", PreHash: hashOf(t, v1), PostHash: hashOf(t, v2), Intent: "INT-002", Process: proc,
			Ranges: []ledger.Range{{StartLine: 3, EndLine: 3, ContentHash: lineHash("agent")}}},
		ledger.Change{Event: ledger.EventAccept, Path: "f", PostHash: hashOf(t, v3), Process: &ledger.Process{Pid: 9, Comm: "intentfs (alice)"}},
	)
	got, err := f.source().Blame("f")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ text, intent, contributor string }{{"a", "INT-001", "ai"}, {"human", "", "human"}, {"b", "INT-001", "ai"}, {"agent", "INT-002", "ai"}}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if g := got[i]; g.Text != w.text || g.Intent != w.intent || g.Contributor != w.contributor || g.Record == "" {
			t.Errorf("line %d: %q by %q (%s, record %q), want %q by %q (%s)", i+1, g.Text, g.Intent, g.Contributor, g.Record, w.text, w.intent, w.contributor)
		}
	}
}
