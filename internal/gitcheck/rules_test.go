package gitcheck

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

func TestClassifyPath(t *testing.T) {
	tests := []struct {
		rel  string
		want GovClass
	}{
		{".orchestration/active_intents.yaml", GovRules},
		{".intentignore", GovRules},
		{".orchestration/.intentignore", GovRules},
		{".orchestration/agent_trace.jsonl", GovRules}, // a ledger committed by hand: no daemon commits one
		{".orchestration/objects/ab/cd", GovRules},
		{".orchestration/sub/x.md", GovRules}, // the daemon's records are directly in .orchestration/
		{".claude/settings.json", GovRules},
		{".codex/hooks.json", GovRules},
		{".orchestration/intent_map.md", GovRecords},
		{".orchestration/CLAUDE.md", GovRecords},
		{".orchestration/AGENT.md", GovRecords},
		{".orchestration/.gitignore", GovRecords},
		{".gitattributes", GovAttributes},
		{"src/.gitattributes", GovAttributes},
		{"src/.intentignore", GovNone}, // only the two ignore files are read
		{"CLAUDE.md", GovNone},         // the agent file: the daemon's section carries an exempt record
		{".claude/settings.local.json", GovNone},
		{"src/.claude/settings.json", GovNone},
		{"orchestration/active_intents.yaml", GovNone},
		{".orchestrationx/active_intents.yaml", GovNone},
		{"src/a.go", GovNone},
	}
	for _, tt := range tests {
		got, what := ClassifyPath(tt.rel)
		if got != tt.want {
			t.Errorf("ClassifyPath(%q) = %d (%s), want %d", tt.rel, got, what, tt.want)
		}
		if (got == GovNone) != (what == "") {
			t.Errorf("ClassifyPath(%q): class %d with description %q", tt.rel, got, what)
		}
	}
}

func TestAttributesChanged(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     bool
	}{
		{"no file either side", "", "", false},
		{"a filter added", "", "* filter=evil\n", true},
		{"a diff driver added", "*.go text\n", "*.go text\n*.md diff=hidden\n", true},
		{"diff unset: hides content from a reviewer", "", "README.md -diff\n", true},
		{"binary macro", "", "*.dat binary\n", true},
		{"a merge driver removed", "*.lock merge=ours\n", "", true},
		{"text conversion", "", "*.txt eol=crlf\n", true},
		{"a macro defined", "", "[attr]safe export-ignore\n", true},
		{"an unknown name may be a macro", "", "* mymacro\n", true},
		{"a quoted pattern with a filter", "", "\"a b.txt\" filter=x\n", true},
		{"export-ignore only", "", "tests/ export-ignore\n", false},
		{"linguist language only", "*.h linguist-language=C\n", "*.h linguist-language=C++\n", false},
		{"comments and blank lines", "* text\n", "# comment\n\n* text\n", false},
		{"reordered and respaced driver lines", "*.a filter=x\n*.b diff=y\n", "*.b   diff=y\n*.a\tfilter=x\n", false},
		{"a driver line unchanged beside a harmless change", "* filter=x\n", "* filter=x\ndocs/ export-ignore\n", false},
	}
	for _, tt := range tests {
		if got := AttributesChanged([]byte(tt.old), []byte(tt.new)); got != tt.want {
			t.Errorf("%s: AttributesChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// rulesRepo is a repository whose base commit holds the policy, an ignore
// file and (below sub/) a second workspace's policy.
func rulesRepo(t *testing.T) (*gitexec.Repo, string, string) {
	t.Helper()
	dir := t.TempDir()
	gittest.Init(t, dir)
	base := gittest.Commit(t, dir, "base", map[string]string{
		policy.IntentsFile:          gittest.Policy,
		".intentignore":             "build/\n",
		"sub/" + policy.IntentsFile: gittest.Policy,
		"README.md":                 "# project\n",
	})
	repo, err := gitexec.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo, dir, base
}

func TestLoadRules(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// change makes a commit from the base (nil: load the base).
		change func(t *testing.T, dir string)
		prefix string
		// wantErr is part of the error; "" for none.
		wantErr     string
		wantIgnores []string
	}{{
		name:        "the base's policy and ignore file",
		wantIgnores: []string{".intentignore"},
	}, {
		name:        "a workspace below the top of the work tree",
		prefix:      "sub/",
		wantIgnores: []string{},
	}, {
		name: "an ignore file in .orchestration/ too, read first",
		change: func(t *testing.T, dir string) {
			gittest.Commit(t, dir, "ig", map[string]string{".orchestration/.intentignore": "tmp/\n"})
		},
		wantIgnores: []string{".orchestration/.intentignore", ".intentignore"},
	}, {
		name: "no policy",
		change: func(t *testing.T, dir string) {
			gittest.Git(t, dir, "rm", "-q", policy.IntentsFile)
			gittest.Git(t, dir, "commit", "-qm", "rm")
		},
		wantErr: "does not exist at",
	}, {
		name: "the policy as a symlink (mode 120000)",
		change: func(t *testing.T, dir string) {
			sh(t, dir, "rm .orchestration/active_intents.yaml && ln -s ../README.md .orchestration/active_intents.yaml && git add -A && git commit -qm link")
		},
		wantErr: "is a symlink",
	}, {
		name: "an ignore file as a symlink",
		change: func(t *testing.T, dir string) {
			sh(t, dir, "rm .intentignore && ln -s README.md .intentignore && git add -A && git commit -qm link")
		},
		wantErr: "is a symlink",
	}, {
		name: ".orchestration as a symlink to a directory elsewhere: no policy through it",
		change: func(t *testing.T, dir string) {
			sh(t, dir, "mkdir -p elsewhere && git mv .orchestration/active_intents.yaml elsewhere/ && rmdir .orchestration && ln -s elsewhere .orchestration && git add -A && git commit -qm link")
		},
		wantErr: "does not exist at",
	}, {
		name: "the policy as a directory",
		change: func(t *testing.T, dir string) {
			sh(t, dir, "git rm -q .orchestration/active_intents.yaml && mkdir -p .orchestration/active_intents.yaml && echo x > .orchestration/active_intents.yaml/f && git add -A && git commit -qm dir")
		},
		wantErr: "not a regular file",
	}, {
		name: "an ignore file over the size bound",
		change: func(t *testing.T, dir string) {
			gittest.Commit(t, dir, "big", map[string]string{".intentignore": strings.Repeat("# padding\n", policy.MaxIgnoreBytes/10+1)})
		},
		wantErr: "more than the",
	}, {
		name: "a policy that does not parse",
		change: func(t *testing.T, dir string) {
			gittest.Commit(t, dir, "bad", map[string]string{policy.IntentsFile: "active_intents: [\n"})
		},
		wantErr: "the policy at",
	}, {
		name: "an ignore pattern that does not parse",
		change: func(t *testing.T, dir string) {
			gittest.Commit(t, dir, "bad", map[string]string{".intentignore": "src/[\n"})
		},
		wantErr: "the ignore files at",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, dir, base := rulesRepo(t)
			commit := base
			if tt.change != nil {
				tt.change(t, dir)
				commit = gittest.Git(t, dir, "rev-parse", "HEAD")
			}
			// The work tree says something else: it is never read.
			gittest.Write(t, dir, map[string]string{".intentignore": "*\n"})
			r, err := LoadRules(ctx, repo, commit, tt.prefix)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadRules: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Commit != commit || r.Policy != policy.IntentsFile || !slices.Equal(r.IgnoreFiles, tt.wantIgnores) {
				t.Fatalf("rules %+v, want commit %s and ignore files %v", r, commit, tt.wantIgnores)
			}
			if r.Intents.Get("INT-001") == nil || r.Ignore.Match("README.md", false) {
				t.Fatalf("the rules are not the commit's: INT-001 %v, README.md exempt %v", r.Intents.Get("INT-001"), r.Ignore.Match("README.md", false))
			}
		})
	}
	repo, _, _ := rulesRepo(t)
	if _, err := LoadRules(ctx, repo, "HEAD", ""); err == nil {
		t.Error("LoadRules took a revision name, not a commit id")
	}
}

func sh(t *testing.T, dir, script string) {
	t.Helper()
	if out, err := gittest.Sh(dir, script); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

func TestRangeBase(t *testing.T) {
	ctx := context.Background()
	repo, dir, base := rulesRepo(t)
	gittest.Git(t, dir, "checkout", "-q", "-b", "pr")
	head := gittest.Commit(t, dir, "pr", map[string]string{"src/a.go": "package a\n"})
	gittest.Git(t, dir, "checkout", "-q", "main")
	main := gittest.Commit(t, dir, "main moves on", map[string]string{"docs/x.md": "x\n"})
	tests := []struct {
		revs    []string
		want    string
		wantErr error
	}{
		{[]string{"main..pr"}, main, nil},
		{[]string{base + ".." + head}, base, nil},
		{[]string{"^main", "pr"}, main, nil},
		{[]string{"main...pr"}, base, nil}, // the merge-base
		{[]string{"pr"}, "", ErrNoBase},
		{[]string{"^main", "^" + base, "pr"}, "", nil}, // several: an error of its own
	}
	for _, tt := range tests {
		got, err := RangeBase(ctx, repo, tt.revs)
		switch {
		case tt.want != "" && (err != nil || got != tt.want):
			t.Errorf("RangeBase(%v) = %s, %v; want %s", tt.revs, got, err, ledger.ShortHash(tt.want))
		case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
			t.Errorf("RangeBase(%v): %v, want %v", tt.revs, err, tt.wantErr)
		case tt.want == "" && err == nil:
			t.Errorf("RangeBase(%v) = %s, want an error", tt.revs, got)
		}
	}
	if _, err := RangeBase(ctx, repo, []string{"nosuch..pr"}); err == nil {
		t.Error("RangeBase of a range with an unknown name did not fail")
	}
}

func TestResolveRulesRev(t *testing.T) {
	ctx := context.Background()
	repo, dir, base := rulesRepo(t)
	gittest.Git(t, dir, "checkout", "-q", "-b", "pr")
	mid := gittest.Commit(t, dir, "one", map[string]string{"src/a.go": "package a\n"})
	gittest.Commit(t, dir, "two", map[string]string{"src/b.go": "package a\n"})
	revs := []string{base + "..pr"}
	tests := []struct {
		rev     string
		want    string
		wantErr string
	}{
		{"main", base, ""},
		{base, base, ""},
		{"pr", "", "is in the range being checked"},
		{mid, "", "is in the range being checked"},
		{"HEAD", "", "is in the range being checked"},
		{"main@{0}", "", "reflog"},
		{"-x", "", "not a revision"},
		{"nosuch", "", "no such commit"},
	}
	for _, tt := range tests {
		got, err := ResolveRulesRev(ctx, repo, tt.rev, revs)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ResolveRulesRev(%q) = %s, %v; want an error with %q", tt.rev, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ResolveRulesRev(%q) = %s, %v; want %s", tt.rev, got, err, tt.want)
		}
	}
}

// TestCheckTrustedRules: with rules from a trusted revision, a change in
// the range to a governance file is a problem no ignore file exempts;
// the daemon's records are notices; a .gitattributes change counts only
// where it touches a driver line. Without TrustedRules (the mount's own
// gate) governance files stay notices.
func TestCheckTrustedRules(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		record  map[string]string // path → content written under INT-001
		ignore  string
		trusted bool
		want    []string // paths with problems
		notices int
	}{
		{name: "an ignore file added", files: map[string]string{".intentignore": "*\n"}, trusted: true, want: []string{".intentignore"}},
		{name: "the policy widened, the base ignoring .orchestration", files: map[string]string{policy.IntentsFile: "active_intents: []\n"}, ignore: ".orchestration/\n", trusted: true, want: []string{policy.IntentsFile}},
		{name: "hook settings", files: map[string]string{".claude/settings.json": "{}\n"}, trusted: true, want: []string{".claude/settings.json"}},
		{name: "the intent map is a notice", files: map[string]string{".orchestration/intent_map.md": "# map\n"}, trusted: true, notices: 1},
		{name: "a filter in .gitattributes", files: map[string]string{"src/.gitattributes": "* filter=x\n"}, record: map[string]string{"src/.gitattributes": "* filter=x\n"}, trusted: true, want: []string{"src/.gitattributes"}},
		{name: "a harmless .gitattributes line, recorded", files: map[string]string{"src/.gitattributes": "tests/ export-ignore\n"}, record: map[string]string{"src/.gitattributes": "tests/ export-ignore\n"}, trusted: true},
		{name: "the gate: an ignore file is a notice", files: map[string]string{".intentignore": "*\n"}, notices: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.ignore != "" {
				ig, _, err := policy.IgnoreFrom(func(rel string) ([]byte, error) {
					if rel == ".intentignore" {
						return []byte(tt.ignore), nil
					}
					return nil, os.ErrNotExist
				})
				if err != nil {
					t.Fatalf("parsing the ignore file %q: %v", tt.ignore, err)
				}
				f.c.Ignore = ig
			}
			f.c.TrustedRules = tt.trusted
			for p, c := range tt.record {
				f.record(ledger.EventCreate, "INT-001", p, c)
			}
			gittest.Commit(t, f.dir, "change", tt.files)
			rep := f.check()
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.Path)
				if p.Kind != KindGovernance || !strings.Contains(p.Detail, "land it on the base first") {
					t.Errorf("problem %+v: not a governance problem that says what to do", p)
				}
			}
			if !slices.Equal(got, tt.want) || len(rep.Notices) != tt.notices {
				t.Errorf("problems %v, notices %d; want %v, %d", got, len(rep.Notices), tt.want, tt.notices)
			}
		})
	}
	// A .gitattributes above the workspace applies to it.
	f := newFixture(t)
	f.c.TrustedRules, f.c.Prefix = true, "src/"
	gittest.Commit(t, f.dir, "attrs", map[string]string{".gitattributes": "* filter=x\n"})
	if rep := f.check(); len(rep.Problems) != 1 || rep.Problems[0].Path != ".gitattributes" {
		t.Errorf("a filter above the workspace: %+v", rep.Problems)
	}
}
