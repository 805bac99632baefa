package gitnotes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitcheck"
	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// clone is a work tree with a ledger of its own, as a mounted workspace
// has.
type clone struct {
	t    *testing.T
	dir  string
	repo *gitexec.Repo
}

func newClone(t *testing.T, dir string) *clone {
	repo, err := gitexec.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &clone{t: t, dir: dir, repo: repo}
}

func (c *clone) ledgerPath() string { return filepath.Join(c.dir, ledger.FileName) }

// work records writes of files under intent in the clone's ledger (with
// a real hash chain), writes them and commits them.
func (c *clone) work(intent, msg string, files map[string]string) string {
	c.t.Helper()
	if err := os.MkdirAll(filepath.Dir(c.ledgerPath()), 0o755); err != nil {
		c.t.Fatal(err)
	}
	w, err := ledger.OpenWriter(c.ledgerPath(), ledger.WriterOptions{Source: c.dir, Version: "test"})
	if err != nil {
		c.t.Fatal(err)
	}
	w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventSelect, Intent: intent}, "test"))
	for p, content := range files {
		w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventCreate, Path: p, Intent: intent, PostHash: gittest.Sha(content),
			Lines: strings.Count(content, "\n")}, "test"))
	}
	if err := w.Close(); err != nil {
		c.t.Fatal(err)
	}
	return gittest.Commit(c.t, c.dir, msg, files)
}

func (c *clone) sync() *SyncResult {
	c.t.Helper()
	res, err := Sync(context.Background(), c.repo, c.ledgerPath(), "", ledger.Keep{})
	if err != nil {
		c.t.Fatal(err)
	}
	return res
}

func (c *clone) notes() *Set {
	c.t.Helper()
	set, err := Read(context.Background(), c.repo)
	if err != nil {
		c.t.Fatal(err)
	}
	return set
}

// check runs gitcheck on all of HEAD with the records of the notes only.
func (c *clone) check() *gitcheck.Report {
	c.t.Helper()
	ix := gitcheck.NewIndex()
	for _, l := range c.notes().Lines {
		ix.Add(l.Record)
	}
	intents, _, err := policy.ParseIntents("p.yaml", []byte(gittest.Policy))
	if err != nil {
		c.t.Fatal(err)
	}
	igDir := c.t.TempDir()
	if err := os.WriteFile(filepath.Join(igDir, ".intentignore"), []byte(".orchestration/\n"), 0o644); err != nil {
		c.t.Fatal(err)
	}
	ig, _, err := policy.LoadIgnore(igDir)
	if err != nil {
		c.t.Fatal(err)
	}
	ch := &gitcheck.Checker{Repo: c.repo, Index: ix, Intents: intents, Ignore: ig}
	rep, err := ch.Check(context.Background(), []string{"HEAD"})
	if err != nil {
		c.t.Fatal(err)
	}
	return rep
}

func noteLines(t *testing.T, dir, commit string) string {
	out, _ := gittest.GitErr(dir, "notes", "--ref="+Ref, "show", commit)
	return out
}

// setup makes a bare origin with one base commit, and returns it.
func setup(t *testing.T) (root, origin string) {
	root = t.TempDir()
	origin = filepath.Join(root, "origin.git")
	gittest.Git(t, root, "init", "-q", "--bare", "-b", "main", origin)
	seed := filepath.Join(root, "seed")
	gittest.Init(t, seed)
	gittest.Commit(t, seed, "base", map[string]string{"README.md": "# p\n", ".gitignore": ".orchestration/\n"})
	gittest.Git(t, seed, "push", "-q", origin, "main")
	return root, origin
}

func TestSyncAttachesRecordsToTheirCommitsAndKeepsPending(t *testing.T) {
	root, origin := setup(t)
	gittest.Git(t, root, "clone", "-q", origin, "a")
	a := newClone(t, filepath.Join(root, "a"))
	c1 := a.work("INT-001", "one", map[string]string{"src/one.go": "package one\n"})
	c2 := a.work("INT-001", "two", map[string]string{"src/two.go": "package two\n"})
	// Work recorded but not committed stays pending.
	w, _ := ledger.OpenWriter(a.ledgerPath(), ledger.WriterOptions{Source: a.dir, Version: "test"})
	w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventWrite, Path: "src/three.go", Intent: "INT-001", PostHash: gittest.Sha("x")}, "test"))
	w.Close()
	res := a.sync()
	// c1: header, select, create; c2: select, create; pending: the write.
	if res.Commits[c1] != 3 || res.Commits[c2] != 2 || res.Pending != 1 || res.Attached != 5 {
		t.Fatalf("sync = %+v (c1 %s, c2 %s)", res, c1, c2)
	}
	if !strings.Contains(noteLines(t, a.dir, c2), `"path":"src/two.go"`) || strings.Contains(noteLines(t, a.dir, c2), "src/one.go") {
		t.Fatalf("note of c2:\n%s", noteLines(t, a.dir, c2))
	}
	// A second sync attaches nothing twice.
	if res := a.sync(); res.Attached != 0 || res.AlreadyNoted != 5 || res.Pending != 1 {
		t.Fatalf("second sync = %+v", res)
	}
	if got := gittest.Git(t, a.dir, "config", "--get-all", "notes.rewriteRef"); got != Ref {
		t.Fatalf("notes.rewriteRef = %q", got)
	}
}

// A commit made in the mount gets a commit record after the changes it
// holds; that record goes in the commit's own note, not the next one's.
func TestSyncAttachesACommitsOwnCommitRecord(t *testing.T) {
	root, origin := setup(t)
	gittest.Git(t, root, "clone", "-q", origin, "a")
	a := newClone(t, filepath.Join(root, "a"))
	c1 := a.work("INT-001", "one", map[string]string{"src/one.go": "package one\n"})
	w, err := ledger.OpenWriter(a.ledgerPath(), ledger.WriterOptions{Source: a.dir, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventDenied, Path: "README.md", Intent: "INT-001", Reason: "outside"}, "test"))
	w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventCommit, Path: ".git/refs/heads/main", Intent: "INT-001", Commit: c1}, "test"))
	w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventSelect, Intent: "INT-002"}, "test"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res := a.sync()
	// c1: header, select, create, the denial and its commit record; the
	// later select waits for the next commit.
	if res.Commits[c1] != 5 || res.Pending != 1 {
		t.Fatalf("sync = %+v", res)
	}
	note := noteLines(t, a.dir, c1)
	if !strings.Contains(note, `"event":"commit"`) || !strings.Contains(note, `"commit":"`+c1+`"`) || strings.Contains(note, "INT-002") {
		t.Fatalf("note of c1:\n%s", note)
	}
	// A commit record of a commit HEAD does not reach attaches nothing.
	w, _ = ledger.OpenWriter(a.ledgerPath(), ledger.WriterOptions{Source: a.dir, Version: "test"})
	w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventCommit, Path: ".git/refs/heads/side", Intent: "INT-002", Commit: strings.Repeat("ab", 20)}, "test"))
	w.Close()
	if res := a.sync(); res.Attached != 0 || res.Pending != 2 {
		t.Fatalf("second sync = %+v", res)
	}
}

// Two commits made in the mount, synced together, each get the records
// up to their own commit record, even when the first commit's content is
// written again after the second (git restoring the file after a stash).
func TestSyncStopsEachMountCommitAtItsCommitRecord(t *testing.T) {
	root, origin := setup(t)
	gittest.Git(t, root, "clone", "-q", origin, "a")
	a := newClone(t, filepath.Join(root, "a"))
	appendRecords := func(changes ...ledger.Change) {
		t.Helper()
		w, err := ledger.OpenWriter(a.ledgerPath(), ledger.WriterOptions{Source: a.dir, Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			w.Append(ledger.NewRecord(c, "test"))
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	one := "package one\n"
	c1 := a.work("INT-001", "one", map[string]string{"src/one.go": one})
	appendRecords(ledger.Change{Event: ledger.EventCommit, Path: ".git/refs/heads/main", Intent: "INT-001", Commit: c1})
	c2 := a.work("INT-002", "two", map[string]string{"docs/two.md": "two\n"})
	appendRecords(ledger.Change{Event: ledger.EventCommit, Path: ".git/refs/heads/main", Intent: "INT-002", Commit: c2},
		ledger.Change{Event: ledger.EventWrite, Path: "src/one.go", Intent: "INT-001", PostHash: gittest.Sha(one), RestoredFrom: "commit " + c1})
	res := a.sync()
	// c1: header, select, create, commit; c2: select, create, commit; the
	// restore waits for a commit that holds it.
	if res.Commits[c1] != 4 || res.Commits[c2] != 3 || res.Pending != 1 {
		t.Fatalf("sync = %+v", res)
	}
	if note := noteLines(t, a.dir, c2); !strings.Contains(note, "docs/two.md") || !strings.Contains(note, `"commit":"`+c2+`"`) {
		t.Fatalf("note of c2:\n%s", note)
	}
}

// A Cursor reads only what the ledger gained, and starts over when the
// notes ref moved under it; either way the notes end up as a full Sync
// leaves them.
func TestSyncFromACursor(t *testing.T) {
	root, origin := setup(t)
	gittest.Git(t, root, "clone", "-q", origin, "a")
	a := newClone(t, filepath.Join(root, "a"))
	ctx := context.Background()
	var cur Cursor
	syncCur := func() *SyncResult {
		t.Helper()
		res, err := SyncFrom(ctx, a.repo, a.ledgerPath(), "", ledger.Keep{}, &cur)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	c1 := a.work("INT-001", "one", map[string]string{"src/one.go": "package one\n"})
	if res := syncCur(); res.Commits[c1] != 3 || res.AlreadyNoted != 0 {
		t.Fatalf("first sync = %+v", res)
	}
	resumeAt := cur.pos
	if resumeAt.IsZero() || resumeAt.Line != 4 {
		t.Fatalf("the cursor is at %+v, want line 4", resumeAt)
	}
	c2 := a.work("INT-001", "two", map[string]string{"src/two.go": "package two\n"})
	if res := syncCur(); res.Commits[c2] != 2 || res.AlreadyNoted != 3 || res.Attached != 2 || res.Pending != 0 {
		t.Fatalf("resumed sync = %+v", res)
	}
	if !strings.Contains(noteLines(t, a.dir, c2), "src/two.go") || strings.Contains(noteLines(t, a.dir, c2), "src/one.go") {
		t.Fatalf("note of c2:\n%s", noteLines(t, a.dir, c2))
	}
	// Someone else removes c2's note: the ref moved, so the cursor's sync
	// reads everything and attaches c2's records again.
	gittest.Git(t, a.dir, "notes", "--ref="+Ref, "remove", c2)
	if res := syncCur(); res.Commits[c2] != 2 || res.AlreadyNoted != 3 {
		t.Fatalf("sync after the notes moved = %+v", res)
	}
	// A fresh, full Sync finds every record noted once.
	if res := a.sync(); res.Attached != 0 || res.AlreadyNoted != 5 || res.Pending != 0 {
		t.Fatalf("full sync = %+v", res)
	}
	if set := a.notes(); len(set.Lines) != 5 || len(set.Conflicts) != 0 {
		t.Fatalf("notes: %d lines, %d conflicts", len(set.Lines), len(set.Conflicts))
	}
}

func TestAmendAndRebaseKeepTheNotes(t *testing.T) {
	root, origin := setup(t)
	gittest.Git(t, root, "clone", "-q", origin, "a")
	a := newClone(t, filepath.Join(root, "a"))
	c1 := a.work("INT-001", "one", map[string]string{"src/one.go": "package one\n"})
	a.sync()
	before := noteLines(t, a.dir, c1)
	gittest.Git(t, a.dir, "commit", "-q", "--amend", "-m", "one, amended")
	amended := gittest.Git(t, a.dir, "rev-parse", "HEAD")
	if amended == c1 || noteLines(t, a.dir, amended) != before {
		t.Fatalf("amend lost the note: %q", noteLines(t, a.dir, amended))
	}
	// Rebase onto a new upstream commit.
	gittest.Git(t, a.dir, "checkout", "-q", "-b", "up", "HEAD~1")
	gittest.Commit(t, a.dir, "upstream", map[string]string{"other.txt": "o\n"})
	gittest.Git(t, a.dir, "checkout", "-q", "main")
	gittest.Git(t, a.dir, "rebase", "-q", "up")
	rebased := gittest.Git(t, a.dir, "rev-parse", "HEAD")
	if rebased == amended || noteLines(t, a.dir, rebased) != before {
		t.Fatalf("rebase lost the note: %q", noteLines(t, a.dir, rebased))
	}
	// check finds the records of the rewritten commit in its note.
	rep := a.check()
	var paths []string
	for _, p := range rep.Problems {
		paths = append(paths, p.Path)
	}
	// README.md and other.txt were never written through a mount; the
	// agent's file is accounted for.
	if strings.Join(paths, ",") != "README.md,.gitignore,other.txt" && strings.Join(paths, ",") != ".gitignore,README.md,other.txt" {
		t.Fatalf("problems on %v", paths)
	}
}

// TestThreeClonesShareHistory: two clones with agents on different
// intents push and fetch notes through a bare origin; a third, fresh
// clone with no ledger sees both histories, checks clean, and verifies
// both origins' chains.
func TestThreeClonesShareHistory(t *testing.T) {
	root, origin := setup(t)
	ctx := context.Background()
	gittest.Git(t, root, "clone", "-q", origin, "a")
	gittest.Git(t, root, "clone", "-q", origin, "b")
	a := newClone(t, filepath.Join(root, "a"))
	b := newClone(t, filepath.Join(root, "b"))

	a.work("INT-001", "src work", map[string]string{"src/api.go": "package api\n"})
	a.sync()
	if _, err := Push(ctx, a.repo, "origin"); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, a.dir, "push", "-q", "origin", "main")

	b.work("INT-002", "docs work", map[string]string{"docs/guide.md": "# guide\n"})
	b.sync()
	// B rebases its work on A's; rewriteRef carries its note.
	gittest.Git(t, b.dir, "pull", "-q", "--rebase", "origin", "main")
	if out, err := Push(ctx, b.repo, "origin"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	gittest.Git(t, b.dir, "push", "-q", "origin", "main")

	gittest.Git(t, root, "clone", "-q", origin, "c")
	c := newClone(t, filepath.Join(root, "c"))
	if _, err := os.Stat(c.ledgerPath()); err == nil {
		t.Fatal("the fresh clone has a ledger file")
	}
	if _, err := Fetch(ctx, c.repo, "origin"); err != nil {
		t.Fatal(err)
	}
	set := c.notes()
	intents := map[string]bool{}
	for _, l := range set.Lines {
		intents[ledger.Str(l.Record.Gov().IntentID)] = true
	}
	if !intents["INT-001"] || !intents["INT-002"] {
		t.Fatalf("the fresh clone sees intents %v", intents)
	}
	rep := VerifyChains(set)
	if !rep.OK() || len(rep.Origins) != 2 {
		t.Fatalf("verify: %+v", rep)
	}
	chk := c.check()
	for _, p := range chk.Problems {
		if p.Path != "README.md" && p.Path != ".gitignore" { // the seed commit, made outside any mount
			t.Errorf("check on the fresh clone: %+v", p)
		}
	}
	// Both clones fetching again changes nothing and loses nothing.
	if _, err := Fetch(ctx, a.repo, "origin"); err != nil {
		t.Fatal(err)
	}
	if got := len(a.notes().Lines); got != len(set.Lines) {
		t.Fatalf("clone a has %d records after fetching, the fresh clone %d", got, len(set.Lines))
	}
}

func TestVerifyChainsFindsAGapAndAForgery(t *testing.T) {
	root, origin := setup(t)
	gittest.Git(t, root, "clone", "-q", origin, "a")
	a := newClone(t, filepath.Join(root, "a"))
	a.work("INT-001", "one", map[string]string{"src/one.go": "package one\n"})
	a.work("INT-001", "two", map[string]string{"src/two.go": "package two\n"})
	a.sync()
	set := a.notes()
	if rep := VerifyChains(set); !rep.OK() || len(rep.Origins) != 1 || rep.Origins[0].Records != 5 {
		t.Fatalf("intact notes: %+v", rep)
	}
	// Drop a record in the middle of the chain: the one after it
	// follows nothing.
	gap := &Set{ids: map[string]int{}}
	for _, l := range set.Lines {
		if !strings.Contains(string(l.Raw), `"path":"src/one.go"`) {
			gap.add(l.Commit, l.Raw)
		}
	}
	if rep := VerifyChains(gap); rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), "follows a line that is in no note") {
		t.Fatalf("gap: %+v", rep)
	}
	// Change a record's bytes: the next one no longer follows it.
	changed := &Set{ids: map[string]int{}}
	for _, l := range set.Lines {
		changed.add(l.Commit, []byte(strings.Replace(string(l.Raw), `"path":"src/one.go"`, `"path":"src/evil.go"`, 1)))
	}
	if rep := VerifyChains(changed); rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), "follows a line that is in no note") {
		t.Fatalf("changed record: %+v", rep)
	}
}

// TestHostileRepositoryRunsNothing: the repository's own config and hooks
// name programs for every git command intentfs runs (check, sync, fetch,
// push, reading versions); none of them runs.
func TestHostileRepositoryRunsNothing(t *testing.T) {
	root, origin := setup(t)
	gittest.Git(t, root, "clone", "-q", origin, "a")
	a := newClone(t, filepath.Join(root, "a"))
	a.work("INT-001", "one", map[string]string{"src/one.go": "package one\n"})
	marker := filepath.Join(t.TempDir(), "pwned")
	script := filepath.Join(t.TempDir(), "evil.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$0 $*\" >> "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"post-rewrite", "post-commit", "pre-push", "pre-auto-gc", "reference-transaction", "post-index-change", "post-checkout"} {
		if err := os.WriteFile(filepath.Join(a.dir, ".git", "hooks", h), []byte("#!/bin/sh\n"+script+" hook "+h+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	included := filepath.Join(t.TempDir(), "included.config")
	if err := os.WriteFile(included, []byte("[core]\n\tfsmonitor = "+script+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{
		{"include.path", included},
		{"core.pager", script}, {"pager.log", script}, {"core.editor", script},
		{"log.showSignature", "true"}, {"gpg.program", script},
		{"core.sshCommand", script}, {"remote.origin.uploadpack", script}, {"remote.origin.receivepack", script},
		{"credential.helper", "!" + script}, {"core.askPass", script},
		{"alias.notes", "!" + script}, {"gc.auto", "1"}, {"gc.autoDetach", "false"},
		{"diff.evil.textconv", script},
	} {
		gittest.Git(t, a.dir, "config", "--add", kv[0], kv[1])
	}
	if err := os.WriteFile(filepath.Join(a.dir, ".git", "info", "attributes"), []byte("* diff=evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(marker)
	ctx := context.Background()
	a.sync()
	if rep := a.check(); rep.Commits == 0 {
		t.Fatalf("check read no commits: %+v", rep)
	}
	if _, err := Push(ctx, a.repo, "origin"); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(ctx, a.repo, "origin"); err != nil {
		t.Fatal(err)
	}
	v, err := a.repo.NewVersions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if b, err := v.Find(ctx, "src/one.go", gittest.Sha("package one\n")); err != nil || string(b) != "package one\n" {
		t.Fatalf("version: %q %v", b, err)
	}
	if _, err := a.repo.Output(ctx, "status"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("the repository's config ran a program:\n%s", b)
	}
	// The same config does run for plain git: the test proves something.
	gittest.GitErr(a.dir, "status")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("plain git ran nothing either; the hostile config is not effective")
	}
}
