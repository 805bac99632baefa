package gitnotes

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/ledger"
)

// secretWork records, in c's ledger, a write by a process whose command
// line holds a secret, and commits it.
func (c *clone) secretWork(path, content string) string {
	c.t.Helper()
	if err := os.MkdirAll(filepath.Dir(c.ledgerPath()), 0o755); err != nil {
		c.t.Fatal(err)
	}
	w, err := ledger.OpenWriter(c.ledgerPath(), ledger.WriterOptions{Source: c.dir, Version: "test"})
	if err != nil {
		c.t.Fatal(err)
	}
	proc := &ledger.Process{Pid: 4242, Uid: 1000, Gid: 1000, Comm: "sh", Exe: "/usr/bin/dash",
		Cmdline: []string{"sh", "-c", "echo x >> f", "--token=hunter2"}}
	w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventCreate, Path: path, Intent: "INT-001", PostHash: gittest.Sha(content),
		Lines: 1, Process: proc, Session: &ledger.Session{ID: "s-1", Name: "agent"}}, "test"))
	if err := w.Close(); err != nil {
		c.t.Fatal(err)
	}
	return gittest.Commit(c.t, c.dir, "work", map[string]string{path: content})
}

func (c *clone) syncKeeping(keep ledger.Keep) {
	c.t.Helper()
	if _, err := Sync(context.Background(), c.repo, c.ledgerPath(), "", keep); err != nil {
		c.t.Fatal(err)
	}
}

// TestNotesCarryWhatAttributionNeeds: by default a note carries no
// command line, uid or absolute source path, only what attribution needs,
// and its chain still verifies; what the policy opts in to is carried.
func TestNotesCarryWhatAttributionNeeds(t *testing.T) {
	tests := []struct {
		name    string
		keep    ledger.Keep
		has     []string
		hasNone []string
	}{
		{"default", ledger.Keep{}, []string{`"comm":"sh"`, `"exe":"dash"`, `"pid":4242`, `"intent_id":"INT-001"`, `"id":"s-1"`},
			[]string{"hunter2", "--token", `"uid"`, "/usr/bin/dash", `"prev":`}},
		{"cmdline and source", ledger.Keep{Cmdline: true, Source: true}, []string{"--token=hunter2", `"source":`}, []string{`"uid"`, "/usr/bin/dash"}},
		{"uids and exe", ledger.Keep{Uids: true, Exe: true}, []string{`"uid":1000`, `"exe":"/usr/bin/dash"`}, []string{"hunter2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, origin := setup(t)
			gittest.Git(t, root, "clone", "-q", origin, "a")
			a := newClone(t, filepath.Join(root, "a"))
			commit := a.secretWork("src/f.go", "package f\n")
			a.syncKeeping(tt.keep)
			note := noteLines(t, a.dir, commit)
			for _, s := range tt.has {
				if !strings.Contains(note, s) {
					t.Errorf("the note lacks %s:\n%s", s, note)
				}
			}
			for _, s := range tt.hasNone {
				if strings.Contains(note, s) {
					t.Errorf("the note carries %s:\n%s", s, note)
				}
			}
			if !tt.keep.Source && strings.Contains(note, a.dir) {
				t.Errorf("the note carries the absolute source %s:\n%s", a.dir, note)
			}
			set := a.notes()
			if rep := VerifyChains(set); !rep.OK() || len(rep.Origins) != 1 || rep.Origins[0].Records != rep.Records {
				t.Fatalf("the notes' chain: %+v", rep)
			}
			if c := Count(set, nil); len(c.Others) != len(set.Lines) {
				t.Errorf("on a fresh clone %d of %d records count", len(c.Others), len(set.Lines))
			}
			local := NewLocal()
			if err := ledger.ScanRaw(a.ledgerPath(), func(_ string, _ int, raw []byte) error {
				var r ledger.Record
				if err := json.Unmarshal(raw, &r); err != nil {
					return err
				}
				local.Add(raw, &r)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if c := Count(set, local); len(c.Own) != len(set.Lines) {
				t.Errorf("in the clone that wrote them %d of %d records are its own", len(c.Own), len(set.Lines))
			}
			// A record forking the chain after its header, by either hash
			// of the header, makes the chain count for nothing.
			for _, by := range []string{"prev_public", "prev"} {
				var header Line
				for _, l := range set.Lines {
					if l.Record.Gov().Event == ledger.EventHeader {
						header = l
					}
				}
				h, _ := ledger.PublicHash(header.Raw)
				if by == "prev" {
					h = ledger.LineHash(header.Raw)
				}
				forked := &Set{ids: map[string]int{}}
				for _, l := range set.Lines {
					forked.add(l.Commit, l.Raw)
				}
				forked.add("c0ffee", []byte(`{"version":"0.1.0","id":"8c1e2b3c-4d5e-4f60-8172-839405a6b7c8","timestamp":"2026-01-01T00:00:00Z","files":[{"path":"README.md","conversations":[]}],"metadata":{"dev.intentfs":{"event":"revert","post_hash":"sha256:00","`+by+`":"`+h+`"}}}`))
				if c := Count(forked, nil); len(c.Others) != 0 {
					t.Errorf("a fork by %s: %d records still count", by, len(c.Others))
				}
				if rep := VerifyChains(forked); rep.OK() {
					t.Errorf("a fork by %s verifies", by)
				}
			}
			// A public field changed in a note breaks the chain after it.
			for i, l := range set.Lines {
				if l.Record.Gov().Event == ledger.EventHeader {
					set.Lines[i].Raw = []byte(strings.Replace(string(l.Raw), `"intentfs ledger"`, `"a forged header"`, 1))
				}
			}
			if rep := VerifyChains(set); rep.OK() {
				t.Errorf("a changed header in a note still verifies")
			}
		})
	}
}

// TestNotesFollowAChainFromBeforePublicForms: a ledger whose older lines
// have no prev_public (written by an older intentfs) goes into the notes
// with those lines as they are and the newer ones in public form, and the
// chain is followed through both.
func TestNotesFollowAChainFromBeforePublicForms(t *testing.T) {
	root, origin := setup(t)
	gittest.Git(t, root, "clone", "-q", origin, "a")
	a := newClone(t, filepath.Join(root, "a"))
	if err := os.MkdirAll(filepath.Dir(a.ledgerPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	// The old ledger: a header and a create, chained by prev alone.
	var lines []string
	prev := ledger.Genesis
	for _, c := range []ledger.Change{{Event: ledger.EventHeader, Reason: "intentfs ledger"},
		{Event: ledger.EventCreate, Path: "old.go", Intent: "INT-001", PostHash: gittest.Sha("package old\n"), Lines: 1,
			Process: &ledger.Process{Pid: 1, Cmdline: []string{"old", "--token=hunter2"}}}} {
		r := ledger.NewRecord(c, "old")
		r.Gov().Prev = prev
		if c.Event == ledger.EventHeader {
			r.Gov().Chain, r.Gov().Source = "chain-old", a.dir
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
		prev = ledger.LineHash(b)
	}
	if err := os.WriteFile(a.ledgerPath(), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Commit(t, a.dir, "old", map[string]string{"old.go": "package old\n"})
	a.secretWork("src/new.go", "package new\n")
	a.syncKeeping(ledger.Keep{})
	set := a.notes()
	if rep := VerifyChains(set); !rep.OK() || len(rep.Origins) != 1 || rep.Origins[0].Records != len(set.Lines) {
		t.Fatalf("a chain from before public forms: %+v", rep)
	}
	for _, l := range set.Lines {
		if l.Record.Path() == "src/new.go" && strings.Contains(string(l.Raw), "hunter2") {
			t.Errorf("a new record carries its command line: %s", l.Raw)
		}
	}
}
