package upstreamplan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// fakeSource is an upstream whose tip and history are maps.
type fakeSource struct {
	gitExe  string
	tip     map[string]Entry
	history map[string]History
	err     error // of every answer
	histErr error // of UpstreamHistory only
}

func (s *fakeSource) TrustedGit(p *ledger.Process) bool { return p != nil && p.Exe == s.gitExe }

func (s *fakeSource) UpstreamEntry(_ context.Context, rel string) (Entry, error) {
	if s.err != nil {
		return Entry{}, s.err
	}
	e := s.tip[rel]
	e.Ref, e.Commit = "origin/main", "0123456789abcdef0123"
	return e, nil
}

func (s *fakeSource) UpstreamHistory(_ context.Context, commit, rel string) (History, error) {
	if commit != "0123456789abcdef0123" {
		return History{}, errors.New("history asked of another commit: " + commit)
	}
	if s.histErr != nil {
		return History{}, s.histErr
	}
	return s.history[rel], nil
}

// file is what the source holds at a path, for Workspace.Digest.
type file struct {
	hash string
	exec bool
}

func workspace(files map[string]file, barred uint32) Workspace {
	return Workspace{
		Digest: func(rel string) (string, bool, error) {
			f, ok := files[rel]
			if !ok {
				return "", false, errors.New("no such file")
			}
			return f.hash, f.exec, nil
		},
		BarredWhy: func(pid uint32) string {
			if pid == barred {
				return "barred"
			}
			return ""
		},
	}
}

// TestFor: what git may do at a path, given the upstream's tip, its
// history and the file there now.
func TestFor(t *testing.T) {
	src := &fakeSource{
		tip: map[string]Entry{
			"dir":     {Kind: "tree"},
			"a.go":    {Kind: "blob", Mode: "100644", SHA256: "new"},
			"run.sh":  {Kind: "blob", Mode: "100755", SHA256: "script"},
			"link":    {Kind: "blob", Mode: "120000", SHA256: "target"},
			"sub":     {Kind: "commit"},
			"same.go": {Kind: "blob", Mode: "100644", SHA256: "same"},
		},
		history: map[string]History{
			"a.go":    {Blobs: map[string]bool{"old": true, "new": true}},
			"gone.go": {Blobs: map[string]bool{"old": true}},
			"same.go": {Blobs: map[string]bool{"same": true}},
			"olddir":  {WasTree: true},
		},
	}
	files := map[string]file{
		"a.go":     {hash: "old"},
		"local.go": {hash: "mine"},
		"a2.go":    {hash: "mine"},
		"gone.go":  {hash: "old"},
		"same.go":  {hash: "same"},
		"modeonly": {hash: "same"},
		"sub":      {hash: "x"},
	}
	src.tip["modeonly"] = Entry{Kind: "blob", Mode: "100755", SHA256: "same"}
	src.history["modeonly"] = History{Blobs: map[string]bool{"same": true}}
	cases := []struct {
		name    string
		op      policy.Op
		path    string
		pid     uint32
		src     *fakeSource
		plan    bool
		rewrite bool
		why     string // part of the refusal
	}{
		{name: "mkdir of a directory the tip has", op: policy.OpMkdir, path: "dir", plan: true},
		{name: "mkdir where the tip has a file", op: policy.OpMkdir, path: "a.go", why: "no directory there"},
		{name: "create of a file the tip has", op: policy.OpCreate, path: "a.go", plan: true},
		{name: "create of an executable the tip has", op: policy.OpCreate, path: "run.sh", plan: true},
		{name: "create where the tip has a symlink", op: policy.OpCreate, path: "link", why: "no regular file"},
		{name: "create where the tip has a directory", op: policy.OpCreate, path: "dir", why: "no regular file"},
		{name: "create where the tip has nothing", op: policy.OpCreate, path: "nothing", why: "no regular file"},
		{name: "rmdir of a directory the tip still has", op: policy.OpRmdir, path: "dir", why: "still has it"},
		{name: "rmdir of a directory the upstream had", op: policy.OpRmdir, path: "olddir", plan: true},
		{name: "rmdir of a directory the upstream never had", op: policy.OpRmdir, path: "mine", why: "never had that directory"},
		{name: "rmdir by a barred git", op: policy.OpRmdir, path: "olddir", pid: 66, why: "barred"},
		{name: "unlink of an old version toward other content", op: policy.OpUnlink, path: "a.go", plan: true, rewrite: true},
		{name: "unlink of an old version the tip no longer has", op: policy.OpUnlink, path: "gone.go", plan: true},
		{name: "unlink of a local change", op: policy.OpUnlink, path: "a2.go", why: "local change"},
		{name: "unlink of a file the upstream never had", op: policy.OpUnlink, path: "local.go", why: "local change"},
		{name: "unlink of the tip's content already", op: policy.OpUnlink, path: "same.go", why: "already holds"},
		{name: "unlink of the tip's content with another mode", op: policy.OpUnlink, path: "modeonly", plan: true, rewrite: true},
		{name: "unlink where the tip has a submodule", op: policy.OpUnlink, path: "sub", why: "no regular file"},
		{name: "unlink of what cannot be read", op: policy.OpUnlink, path: "unreadable", why: "could not be read (no such file)"},
		{name: "unlink by a barred git", op: policy.OpUnlink, path: "a.go", pid: 66, why: "barred"},
		{name: "the upstream cannot be consulted", op: policy.OpCreate, path: "a.go", src: &fakeSource{err: errors.New("no upstream is declared")}, why: "no upstream is declared"},
		{name: "its history cannot be read", op: policy.OpUnlink, path: "gone.go", src: &fakeSource{tip: src.tip, histErr: errors.New("mirror broken")}, why: "mirror broken"},
		{name: "another operation", op: policy.OpChmod, path: "a.go", why: "may not chmod"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := src
			if c.src != nil {
				s = c.src
			}
			req := policy.Request{Op: c.op, Path: c.path, Caller: policy.Caller{Pid: c.pid}}
			plan, why := For(context.Background(), s, req, workspace(files, 66))
			if (plan != nil) != c.plan {
				t.Fatalf("For = (%v, %q), want a plan: %v", plan, why, c.plan)
			}
			if plan != nil {
				if plan.Rewrite != c.rewrite || plan.Entry.Commit != "0123456789abcdef0123" || why != "" {
					t.Fatalf("plan = %+v, %q; want rewrite %v", plan, why, c.rewrite)
				}
				if got := plan.RestoredFrom(); got != "commit 0123456789abcdef0123" {
					t.Fatalf("RestoredFrom = %q", got)
				}
				return
			}
			if !strings.Contains(why, c.why) {
				t.Fatalf("why = %q, want it to say %q", why, c.why)
			}
		})
	}
}

// TestOutside: only the trusted git, and only for the four changes git
// makes to a work tree, turns a scope refusal into an allowed change; the
// process is looked up only then.
func TestOutside(t *testing.T) {
	src := &fakeSource{gitExe: "/usr/bin/git", tip: map[string]Entry{"a.go": {Kind: "blob", Mode: "100644", SHA256: "new"}}}
	denied := func(path string) policy.Decision {
		return policy.Decision{Code: policy.CodeOutOfScope, Validation: policy.ValidationFail, Path: path, Reason: "outside the scope"}
	}
	git := &ledger.Process{Pid: 7, Exe: "/usr/bin/git"}
	cases := []struct {
		name      string
		op        policy.Op
		path      string
		decided   string // the decision's path ("" the request's)
		proc      *ledger.Process
		allow     bool
		reason    string // part of the decision's reason
		askedProc bool
	}{
		{name: "git creates the tip's file", op: policy.OpCreate, path: "a.go", proc: git, allow: true, reason: "git bringing origin/main at 0123456789ab outside the scope", askedProc: true},
		{name: "git creates what the tip lacks", op: policy.OpCreate, path: "b.go", proc: git, reason: "but not here: the upstream's tip has no regular file there", askedProc: true},
		{name: "another program", op: policy.OpCreate, path: "a.go", proc: &ledger.Process{Pid: 8, Exe: "/tmp/git"}, reason: "outside the scope", askedProc: true},
		{name: "an unknown process", op: policy.OpCreate, path: "a.go", reason: "outside the scope", askedProc: true},
		{name: "git writing into a file", op: policy.OpOpenWrite, path: "a.go", proc: git, reason: "outside the scope"},
		{name: "git renaming", op: policy.OpRename, path: "a.go", proc: git, reason: "outside the scope"},
		{name: "a decision about another path", op: policy.OpCreate, path: "a.go", decided: "other", proc: git, reason: "outside the scope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.decided
			if path == "" {
				path = c.path
			}
			asked := false
			process := func() *ledger.Process { asked = true; return c.proc }
			req := policy.Request{Op: c.op, Path: c.path, Caller: policy.Caller{Pid: 7}}
			d, plan := Outside(context.Background(), src, process, req, denied(path), workspace(nil, 0))
			if d.Allow != c.allow || (plan != nil) != c.allow {
				t.Fatalf("Outside = %+v, plan %v; want allowed %v", d, plan, c.allow)
			}
			if c.allow && (d.Code != policy.CodeAllowed || d.Validation != policy.ValidationPass || d.Path != path) {
				t.Fatalf("allowed decision = %+v", d)
			}
			if !c.allow && d.Code != policy.CodeOutOfScope {
				t.Fatalf("refusal's code changed: %+v", d)
			}
			if !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("reason = %q, want it to say %q", d.Reason, c.reason)
			}
			if asked != c.askedProc {
				t.Fatalf("process looked up: %v, want %v", asked, c.askedProc)
			}
		})
	}
}

func TestShortCommit(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": "abc", "0123456789abcdef": "0123456789ab"} {
		if got := ShortCommit(in); got != want {
			t.Errorf("ShortCommit(%q) = %q, want %q", in, got, want)
		}
	}
}
