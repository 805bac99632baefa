package gitcheck

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// fixture is a repository with a base commit, an index of records and a
// checker.
type fixture struct {
	t    testing.TB
	dir  string
	base string
	ix   *Index
	c    *Checker
}

func newFixture(t testing.TB) *fixture {
	dir := t.TempDir()
	gittest.Init(t, dir)
	base := gittest.Commit(t, dir, "base", map[string]string{"README.md": "# project\n", "go.mod": "module x\n", "src/a.go": "package a\n"})
	intents, _, err := policy.ParseIntents("active_intents.yaml", []byte(gittest.Policy))
	if err != nil {
		t.Fatal(err)
	}
	ig := loadIgnore(t, "build/\n")
	repo, err := gitexec.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex()
	return &fixture{t: t, dir: dir, base: base, ix: ix, c: &Checker{Repo: repo, Index: ix, Intents: intents, Ignore: ig}}
}

// record adds a record of writing content to path under intent.
func (f *fixture) record(ev ledger.Event, intent, path, content string) {
	c := ledger.Change{Event: ev, Path: path, Intent: intent}
	if ev != ledger.EventDelete {
		c.PostHash = gittest.Sha(content)
	}
	f.ix.Add(ledger.NewRecord(c, "test"))
}

func (f *fixture) check() *Report {
	f.t.Helper()
	rep, err := f.c.Check(context.Background(), []string{f.base + "..HEAD"})
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		// act records and commits on top of the base commit.
		act func(f *fixture)
		// want is "path: detail" of each problem, in order.
		want    []string
		notices int
	}{{
		name: "a recorded in-scope change is clean",
		act: func(f *fixture) {
			f.record(ledger.EventWrite, "INT-001", "src/a.go", "package a\n\nfunc A() {}\n")
			f.record(ledger.EventCreate, "INT-001", "src/b.go", "package a\n")
			gittest.Commit(t, f.dir, "work", map[string]string{"src/a.go": "package a\n\nfunc A() {}\n", "src/b.go": "package a\n"})
		},
	}, {
		name: "content a human accepted, with no intent, is accounted for",
		act: func(f *fixture) {
			f.record(ledger.EventAccept, "", "README.md", "# our project\n")
			f.ix.Add(ledger.NewRecord(ledger.Change{Event: ledger.EventAccept, Path: "go.mod"}, "test"))
			if out, err := shIn(f.dir, "git rm -q go.mod && git commit -qm rm"); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			gittest.Commit(t, f.dir, "human", map[string]string{"README.md": "# our project\n"})
		},
	}, {
		name: "content other than what a human accepted is not accounted for",
		act: func(f *fixture) {
			f.record(ledger.EventAccept, "", "README.md", "# our project\n")
			gittest.Commit(t, f.dir, "human", map[string]string{"README.md": "# their project\n"})
		},
		want: []string{"README.md: committed content matches no recorded version"},
	}, {
		name: "the plumbing attack: content written into history without the work tree",
		act: func(f *fixture) {
			cmd := "blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,README.md && git commit -qm sneaky"
			if out, err := shIn(f.dir, cmd); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		},
		want: []string{"README.md: never written through the mount"},
	}, {
		name: "a symlink created through the mount, committed with its target",
		act: func(f *fixture) {
			f.ix.Add(ledger.NewRecord(ledger.Change{Event: ledger.EventSymlink, Path: "src/l", Intent: "INT-001", PostHash: gittest.Sha("a.go")}, "test"))
			if out, err := shIn(f.dir, "ln -s a.go src/l && git add src/l && git commit -qm l"); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		},
	}, {
		name: "a symlink retargeted with plumbing: its target was never made",
		act: func(f *fixture) {
			f.ix.Add(ledger.NewRecord(ledger.Change{Event: ledger.EventSymlink, Path: "src/l", Intent: "INT-001", PostHash: gittest.Sha("a.go")}, "test"))
			cmd := "blob=$(printf ../../etc/passwd | git hash-object -w --stdin) && git update-index --add --cacheinfo 120000,$blob,src/l && git commit -qm l"
			if out, err := shIn(f.dir, cmd); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		},
		want: []string{"src/l: a symlink whose target matches no recorded one"},
	}, {
		name: "a symlink record from before targets were recorded accounts for any target",
		act: func(f *fixture) {
			f.ix.Add(ledger.NewRecord(ledger.Change{Event: ledger.EventSymlink, Path: "src/l", Intent: "INT-001"}, "test"))
			if out, err := shIn(f.dir, "ln -s elsewhere src/l && git add src/l && git commit -qm l"); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		},
	}, {
		name: "a symlink never created through the mount",
		act: func(f *fixture) {
			if out, err := shIn(f.dir, "ln -s a.go src/l && git add src/l && git commit -qm l"); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		},
		want: []string{"src/l: a symlink never created through the mount"},
	}, {
		name: "written under an intent whose scope does not cover the path",
		act: func(f *fixture) {
			f.record(ledger.EventWrite, "INT-002", "src/a.go", "package a // docs\n")
			gittest.Commit(t, f.dir, "work", map[string]string{"src/a.go": "package a // docs\n"})
		},
		want: []string{"src/a.go: written under INT-002, whose scope does not cover it"},
	}, {
		name: "content git restored outside the scope is not the intent's authorship",
		act: func(f *fixture) {
			// A merge of upstream work put docs/guide.md back under
			// INT-001 (scope src/**): the upstream commit was not
			// written through the mount, and INT-001 did not write it.
			f.ix.Add(ledger.NewRecord(ledger.Change{Event: ledger.EventCreate, Path: "docs/guide.md", Intent: "INT-001",
				PostHash: gittest.Sha("# guide v2\n"), RestoredFrom: "commit 2346780d0ed7"}, "test"))
			gittest.Commit(t, f.dir, "docs: v2", map[string]string{"docs/guide.md": "# guide v2\n"})
		},
		want: []string{"docs/guide.md: never written through the mount; only restored there by git, from commit 2346780d0ed7"},
	}, {
		name: "content git restored inside the scope accounts for it (the agent reverted a file)",
		act: func(f *fixture) {
			f.ix.Add(ledger.NewRecord(ledger.Change{Event: ledger.EventCreate, Path: "src/a.go", Intent: "INT-001",
				PostHash: gittest.Sha("package a // old\n"), RestoredFrom: "commit 0123456789ab"}, "test"))
			gittest.Commit(t, f.dir, "revert a.go", map[string]string{"src/a.go": "package a // old\n"})
		},
	}, {
		name: "committed content differs from every recorded version",
		act: func(f *fixture) {
			f.record(ledger.EventWrite, "INT-001", "src/a.go", "package a // recorded\n")
			gittest.Commit(t, f.dir, "work", map[string]string{"src/a.go": "package a // something else\n"})
		},
		want: []string{"src/a.go: committed content matches no recorded version"},
	}, {
		name: "a deletion needs a delete record",
		act: func(f *fixture) {
			gittest.Git(t, f.dir, "rm", "-q", "go.mod", "src/a.go")
			f.record(ledger.EventDelete, "INT-001", "src/a.go", "")
			gittest.Git(t, f.dir, "commit", "-qm", "rm")
		},
		want: []string{"go.mod: deleted, but never deleted through the mount"},
	}, {
		name: "exempt paths pass; governance files are notices",
		act: func(f *fixture) {
			gittest.Commit(t, f.dir, "build", map[string]string{"build/out.bin": "x", ".orchestration/intent_map.md": "# map\n"})
		},
		notices: 1,
	}, {
		name: "intentfs's own section of CLAUDE.md, recorded as exempt, is accounted for",
		act: func(f *fixture) {
			f.ix.Add(ledger.NewRecord(ledger.Change{Event: ledger.EventCreate, Path: "CLAUDE.md", PostHash: gittest.Sha("# guide\n"),
				Validation: string(policy.ValidationExempt), Code: string(policy.CodeExempt)}, "test"))
			gittest.Commit(t, f.dir, "agents", map[string]string{"CLAUDE.md": "# guide\n"})
		},
	}, {
		name: "a record of an intent the policy does not define",
		act: func(f *fixture) {
			f.record(ledger.EventWrite, "INT-009", "src/a.go", "package a // 9\n")
			gittest.Commit(t, f.dir, "work", map[string]string{"src/a.go": "package a // 9\n"})
		},
		want: []string{"src/a.go: written under INT-009, which the policy does not define"},
	}, {
		name: "a clean merge holds nothing of its own; the merged commits are checked",
		act: func(f *fixture) {
			gittest.Git(t, f.dir, "checkout", "-q", "-b", "side")
			f.record(ledger.EventWrite, "INT-001", "src/a.go", "package a // side\n")
			gittest.Commit(t, f.dir, "side", map[string]string{"src/a.go": "package a // side\n"})
			gittest.Git(t, f.dir, "checkout", "-q", "main")
			f.record(ledger.EventCreate, "INT-002", "docs/x.md", "x\n")
			gittest.Commit(t, f.dir, "main", map[string]string{"docs/x.md": "x\n"})
			gittest.Git(t, f.dir, "merge", "-q", "--no-edit", "side")
		},
	}, {
		name: "an evil merge: content no parent has is the merge's own change",
		act: func(f *fixture) {
			gittest.Git(t, f.dir, "checkout", "-q", "-b", "side")
			f.record(ledger.EventWrite, "INT-001", "src/a.go", "package a // side\n")
			gittest.Commit(t, f.dir, "side", map[string]string{"src/a.go": "package a // side\n"})
			gittest.Git(t, f.dir, "checkout", "-q", "main")
			cmd := "git merge -q --no-commit side && echo pwned > README.md && git add README.md && git commit -qm merge"
			if out, err := shIn(f.dir, cmd); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		},
		want: []string{"README.md: never written through the mount"},
	}, {
		name: "a merge's own content recorded in scope (a resolved conflict) is accounted for",
		act: func(f *fixture) {
			gittest.Git(t, f.dir, "checkout", "-q", "-b", "side")
			f.record(ledger.EventWrite, "INT-001", "src/a.go", "package a // side\n")
			gittest.Commit(t, f.dir, "side", map[string]string{"src/a.go": "package a // side\n"})
			gittest.Git(t, f.dir, "checkout", "-q", "main")
			f.record(ledger.EventWrite, "INT-001", "src/a.go", "package a // main\n")
			gittest.Commit(t, f.dir, "main", map[string]string{"src/a.go": "package a // main\n"})
			f.record(ledger.EventWrite, "INT-001", "src/a.go", "package a // both\n")
			cmd := "git merge -q --no-commit side; printf 'package a // both\\n' > src/a.go && git add src/a.go && git commit -qm merge"
			if out, err := shIn(f.dir, cmd); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.act(f)
			rep := f.check()
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.Path+": "+strings.Split(p.Detail, " (")[0])
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if len(rep.Notices) != tc.notices {
				t.Errorf("notices = %+v, want %d", rep.Notices, tc.notices)
			}
			if rep.OK() != (len(tc.want) == 0) {
				t.Errorf("OK() = %v with problems %v", rep.OK(), rep.Problems)
			}
		})
	}
}

// TestCheckNewPassesACleanMergeAndNamesTheCommit: a merge that only joins
// two histories holds nothing new; a commit that changes an unrecorded
// path is named in its finding; an option in place of an id is refused.
func TestCheckNewPassesACleanMergeAndNamesTheCommit(t *testing.T) {
	f := newFixture(t)
	gittest.Git(t, f.dir, "checkout", "-q", "-b", "side")
	bad := gittest.Commit(t, f.dir, "unrecorded", map[string]string{"go.mod": "module y\n"})
	gittest.Git(t, f.dir, "checkout", "-q", "main")
	gittest.Commit(t, f.dir, "docs", map[string]string{"README.md": "# p2\n"})
	gittest.Git(t, f.dir, "merge", "-q", "--no-edit", "side")
	merge := gittest.Git(t, f.dir, "rev-parse", "HEAD")
	ctx := context.Background()
	if rep, err := f.c.CheckNew(ctx, []string{merge}); err != nil || len(rep.Problems) != 0 || !rep.OK() {
		t.Fatalf("merge commit: %v %+v", err, rep)
	}
	rep, err := f.c.CheckNew(ctx, []string{bad})
	if err != nil {
		t.Fatalf("unrecorded commit: %v", err)
	}
	if got := rep.Problems; len(got) != 1 || got[0].Commit != bad || got[0].Path != "go.mod" || got[0].Kind != KindUntraced || rep.OK() {
		t.Fatalf("unrecorded commit: %+v", rep)
	}
	if _, err := f.c.CheckNew(ctx, []string{"--output=/tmp/x"}); err == nil {
		t.Fatal("an option passed as a commit was accepted")
	}
}

// TestCheckRunsNoFsmonitor: a repository whose config names an fsmonitor
// program (which git runs on every command that reads the index) runs
// nothing when checked. The full hostile-config test, over every git
// command intentfs runs, is in package gitnotes.
func TestCheckRunsNoFsmonitor(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	script := filepath.Join(t.TempDir(), "fsmonitor.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, f.dir, "config", "core.fsmonitor", script)
	gittest.Git(t, f.dir, "status", "--short")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("plain git did not run the fsmonitor either; the test proves nothing: %v", err)
	}
	os.Remove(marker)
	f.record(ledger.EventWrite, "INT-001", "src/a.go", "package a // v2\n")
	gittest.Git(t, f.dir, "-c", "core.fsmonitor=false", "commit", "-q", "--allow-empty", "-m", "empty")
	gittest.Write(t, f.dir, map[string]string{"src/a.go": "package a // v2\n"})
	gittest.Git(t, f.dir, "-c", "core.fsmonitor=false", "commit", "-qam", "v2")
	os.Remove(marker)
	if rep := f.check(); !rep.OK() || rep.Commits != 2 {
		t.Fatalf("report: %+v", rep)
	}
	if _, err := f.c.Repo.Output(context.Background(), "status"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the repository's core.fsmonitor ran")
	}
}

func shIn(dir, script string) (string, error) { return gittest.Sh(dir, script) }

// TestCheckRefusesAnAmbiguousName: refs/main shadows refs/heads/main for
// git's lookup of "main"; every form of range naming main is refused,
// and the full name is accepted.
func TestCheckRefusesAnAmbiguousName(t *testing.T) {
	f := newFixture(t)
	gittest.Commit(t, f.dir, "more", map[string]string{"README.md": "# p2\n"})
	gittest.Git(t, f.dir, "update-ref", "refs/main", f.base)
	tests := []struct {
		revs      []string
		ambiguous bool
	}{
		{[]string{f.base + "..main"}, true},
		{[]string{f.base + "...main"}, true},
		{[]string{"^" + f.base, "main"}, true},
		{[]string{"^main", "HEAD"}, true},
		{[]string{"main"}, true},
		{[]string{"main~1..HEAD"}, true},
		{[]string{f.base + "..refs/heads/main"}, false},
		{[]string{f.base + "..HEAD"}, false},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.revs, " "), func(t *testing.T) {
			_, err := f.c.Check(context.Background(), tc.revs)
			var amb *AmbiguousError
			if got := errors.As(err, &amb); got != tc.ambiguous {
				t.Fatalf("ambiguous = %v (%v), want %v", got, err, tc.ambiguous)
			}
			if tc.ambiguous && (amb.Name != "main" || !strings.Contains(err.Error(), "refs/main and refs/heads/main; name it in full (refs/heads/main)")) {
				t.Errorf("error: %v", err)
			}
		})
	}
}

// loadIgnore loads text as a source's .intentignore, as the CLI does.
func loadIgnore(t testing.TB, text string) *policy.Ignore {
	t.Helper()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, ".intentignore"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ig, _, err := policy.LoadIgnore(src)
	if err != nil {
		t.Fatalf("loading .intentignore %q: %v", text, err)
	}
	return ig
}
