package history

import (
	"fmt"
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
		// human is a file as it was before the ledger.
		human = "h1\nh2\n"
		// rebased is the human's next version, from upstream.
		rebased = "h1\nh1b\nh2\n"
	)
	// change is a record of the test: contents stand for their hashes.
	type change struct {
		event     ledger.Event
		path, src string // src: a rename's old name
		pre, post string
		intent    string
		// pid is the process that made it (7 if unset); restored, if
		// set, names the change (1-based) whose version git restored,
		// and from a restored_from of another kind.
		pid      int
		restored int
		from     string
	}
	// line is a line of the blame: its text and the intent of its record
	// ("" for no record).
	type line = blameWant
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
			want: []line{{"a", "INT-001", 0}, {"B", "INT-002", 0}, {"c", "INT-002", 0}},
		},
		{
			name: "an edit outside the mount belongs to no record",
			kept: []string{v1, v2},
			changes: []change{
				{event: ledger.EventCreate, path: "f", post: v1, intent: "INT-001"},
				{event: ledger.EventWrite, path: "f", pre: v1, post: v2, intent: "INT-002"},
			},
			file: "f", disk: v2 + "d\n",
			want: []line{{"a", "INT-001", 0}, {"B", "INT-002", 0}, {"c", "INT-002", 0}, {"d", "", 0}},
		},
		{
			name: "the version before the ledger belongs to no record",
			kept: []string{v0},
			changes: []change{
				{event: ledger.EventWrite, path: "f", pre: v0, post: v0 + "new\n", intent: "INT-001"},
			},
			file: "f", disk: v0 + "new\n",
			want: []line{{"old", "", 0}, {"new", "INT-001", 0}},
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
			want: []line{{"a", "INT-001", 0}, {"B", "INT-002", 0}, {"c", "INT-002", 0}},
		},
		{
			name: "a deletion ends the history of a name",
			kept: []string{v1},
			changes: []change{
				{event: ledger.EventCreate, path: "f", post: v1, intent: "INT-001"},
				{event: ledger.EventDelete, path: "f", pre: v1, intent: "INT-001", pid: 8},
				{event: ledger.EventCreate, path: "f", post: v1, intent: "INT-002", pid: 9},
			},
			file: "f", disk: v1,
			want: []line{{"a", "INT-002", 9}, {"b", "INT-002", 9}},
		},
		{
			name: "one process removing a name and writing it anew rewrites the file",
			kept: []string{v1},
			changes: []change{
				{event: ledger.EventCreate, path: "f", post: v1, intent: "INT-001"},
				{event: ledger.EventDelete, path: "f", pre: v1, intent: "INT-002", pid: 9},
				{event: ledger.EventCreate, path: "f", post: v2, intent: "INT-002", pid: 9},
			},
			file: "f", disk: v2,
			want: []line{{"a", "INT-001", 0}, {"B", "INT-002", 9}, {"c", "INT-002", 9}},
		},
		{
			name: "a branch switch restores the owners the version had",
			kept: []string{human, human + "agent\n"},
			changes: []change{
				{event: ledger.EventWrite, path: "f", pre: human, post: human + "agent\n", intent: "INT-001"},
				// git checkout main: the human's version, from git.
				{event: ledger.EventDelete, path: "f", pre: human + "agent\n", intent: "INT-001", pid: 20},
				{event: ledger.EventCreate, path: "f", post: human, intent: "INT-001", pid: 20, from: "before intentfs"},
				// git checkout feat, by another git process.
				{event: ledger.EventDelete, path: "f", pre: human, intent: "INT-001", pid: 21},
				{event: ledger.EventCreate, path: "f", post: human + "agent\n", intent: "INT-001", pid: 22, restored: 1},
			},
			file: "f", disk: human + "agent\n",
			want: []line{{"h1", "", 0}, {"h2", "", 0}, {"agent", "INT-001", 0}},
		},
		{
			name: "a restore of a restore goes back to the first writer",
			kept: []string{human, human + "agent\n"},
			changes: []change{
				{event: ledger.EventWrite, path: "f", pre: human, post: human + "agent\n", intent: "INT-001"},
				{event: ledger.EventDelete, path: "f", pre: human + "agent\n", intent: "INT-002", pid: 20},
				{event: ledger.EventCreate, path: "f", post: human + "agent\n", intent: "INT-002", pid: 21, restored: 1},
				{event: ledger.EventDelete, path: "f", pre: human + "agent\n", intent: "INT-002", pid: 30},
				{event: ledger.EventCreate, path: "f", post: human + "agent\n", intent: "INT-002", pid: 31, restored: 3},
			},
			file: "f", disk: human + "agent\n",
			want: []line{{"h1", "", 0}, {"h2", "", 0}, {"agent", "INT-001", 0}},
		},
		{
			name: "a restore of a moved file's version",
			kept: []string{human, human + "agent\n"},
			changes: []change{
				{event: ledger.EventWrite, path: "f", pre: human, post: human + "agent\n", intent: "INT-001"},
				{event: ledger.EventRename, path: "g", src: "f", post: human + "agent\n", intent: "INT-001"},
				{event: ledger.EventDelete, path: "g", pre: human + "agent\n", intent: "INT-002", pid: 20},
				{event: ledger.EventCreate, path: "g", post: human + "agent\n", intent: "INT-002", pid: 21, restored: 2},
			},
			file: "g", disk: human + "agent\n",
			want: []line{{"h1", "", 0}, {"h2", "", 0}, {"agent", "INT-001", 0}},
		},
		{
			name: "a restore whose version's history is gone is its writer's",
			kept: []string{human + "agent\n"},
			changes: []change{
				{event: ledger.EventWrite, path: "f", pre: human, post: human + "agent\n", intent: "INT-001"},
				{event: ledger.EventDelete, path: "f", pre: human + "agent\n", intent: "INT-002", pid: 20},
				{event: ledger.EventCreate, path: "f", post: human + "agent\n", intent: "INT-002", pid: 21, restored: 1},
			},
			file: "f", disk: human + "agent\n",
			want: []line{{"h1", "INT-001", 0}, {"h2", "INT-001", 0}, {"agent", "INT-001", 0}},
		},
		{
			name: "a rebase keeps the owners of the lines it replays",
			kept: []string{human, human + "agent\n", rebased, rebased + "agent\n"},
			changes: []change{
				{event: ledger.EventWrite, path: "f", pre: human, post: human + "agent\n", intent: "INT-001"},
				// git rebase: the new base from a commit, then the
				// agent's commit replayed on it, each written anew.
				{event: ledger.EventDelete, path: "f", pre: human + "agent\n", intent: "INT-002", pid: 20},
				{event: ledger.EventCreate, path: "f", post: rebased, intent: "INT-002", pid: 20, from: "commit 0123abcd"},
				{event: ledger.EventDelete, path: "f", pre: rebased, intent: "INT-002", pid: 20},
				{event: ledger.EventCreate, path: "f", post: rebased + "agent\n\n", intent: "INT-002", pid: 20},
			},
			file: "f", disk: rebased + "agent\n\n",
			want: []line{{"h1", "", 0}, {"h1b", "", 0}, {"h2", "", 0}, {"agent", "INT-001", 0}, {"", "INT-002", 20}},
		},
		{
			name: "a restore of content from a commit is nobody's",
			kept: []string{v1},
			changes: []change{
				{event: ledger.EventCreate, path: "f", post: v1, intent: "INT-001"},
				{event: ledger.EventDelete, path: "f", pre: v1, intent: "INT-002", pid: 20},
				{event: ledger.EventCreate, path: "f", post: v2, intent: "INT-002", pid: 20, from: "commit 0123abcd"},
			},
			file: "f", disk: v2,
			want: []line{{"a", "INT-001", 0}, {"B", "", 0}, {"c", "", 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			for _, v := range tt.kept {
				f.keep(v)
			}
			f.write(tt.file, tt.disk)
			f.recordEach(len(tt.changes), func(i int, before []*ledger.Record) ledger.Change {
				c := tt.changes[i]
				pid := c.pid
				if pid == 0 {
					pid = 7
				}
				from := c.from
				if c.restored > 0 {
					from = "record " + before[c.restored-1].ID
				}
				return ledger.Change{Event: c.event, Path: c.path, FromPath: c.src, PreHash: hashOf(t, c.pre), PostHash: hashOf(t, c.post),
					Intent: c.intent, RestoredFrom: from, Process: &ledger.Process{Pid: uint32(pid), Comm: "sh"}}
			})
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
				if g.Record != "" && g.Process != w.proc() {
					t.Errorf("line %d by process %q, want %s", i+1, g.Process, w.proc())
				}
			}
		})
	}
}

// TestBlameCreditsAcceptedLinesToTheHuman: lines a person accepted
// (intentfs accept) after editing outside the mount are theirs; lines a
// record still explains keep it, even when that record's version is gone.
// blameWant is a line of a blame a test expects: its text, the intent of
// its record ("" for no record) and the pid of the record's process (7
// if unset).
type blameWant struct {
	text, intent string
	pid          int
}

func (w blameWant) proc() string {
	if w.pid == 0 {
		return "sh[7]"
	}
	return fmt.Sprintf("sh[%d]", w.pid)
}

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
