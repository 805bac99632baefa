package policy

import (
	"strings"
	"testing"
)

// TestGovernanceFilesAreProtected: the files that change what intentfs or
// git does are read-only under any scope and any ignore file; git's work
// state stays exempt.
func TestGovernanceFilesAreProtected(t *testing.T) {
	s := testSnapshot(t, false)
	// An ignore file that exempts everything must not exempt itself or git.
	s.Ignore = loadIgnore(t, "**\n")
	const everything, hooks = "INT-007", "INT-006"
	tests := []struct {
		op     Op
		path   string
		path2  string
		intent string
		code   Code
	}{
		{OpOpenWrite, ".intentignore", "", everything, CodeProtected},
		{OpUnlink, ".intentignore", "", everything, CodeProtected},
		{OpRename, "x", ".intentignore", everything, CodeProtected},
		{OpOpenWrite, ".orchestration/.intentignore", "", everything, CodeProtected},
		{OpOpenWrite, "sub/.intentignore", "", everything, CodeExempt}, // not read by intentfs
		{OpCreate, ".git/commondir", "", everything, CodeProtected},
		{OpCreate, ".git/gitdir", "", everything, CodeProtected},
		{OpOpenWrite, ".git/config", "", everything, CodeProtected},
		{OpCreate, ".git/config.lock", "", everything, CodeProtected},
		{OpCreate, ".git/config.worktree", "", everything, CodeProtected},
		{OpCreate, ".git/objects/info/alternates", "", everything, CodeProtected},
		{OpCreate, ".git/objects/info/alternates.lock", "", everything, CodeProtected},
		{OpCreate, ".git/objects/info/http-alternates", "", everything, CodeProtected},
		{OpOpenWrite, ".git/info/exclude", "", everything, CodeProtected},
		{OpCreate, ".git/info/attributes", "", everything, CodeProtected},
		{OpMkdir, ".git/modules/m", "", everything, CodeProtected},
		{OpCreate, ".git/modules/m/refs/heads/x", "", everything, CodeProtected},
		{OpCreate, ".git/worktrees/w/commondir", "", everything, CodeProtected},
		{OpCreate, ".git/worktrees/w/gitdir", "", everything, CodeProtected},
		{OpCreate, ".git/branches/origin", "", everything, CodeProtected},
		{OpCreate, ".git/remotes/origin", "", everything, CodeProtected},
		{OpSymlink, ".git/hooks/pre-commit", "", everything, CodeProtected},
		{OpLink, ".git/commondir", ".git/HEAD", everything, CodeProtected},
		{OpRename, ".git/ORIG_HEAD", ".git/commondir", everything, CodeProtected},
		{OpCreate, "vendor/lib/.git", "", everything, CodeProtected}, // a .git file redirecting elsewhere
		{OpCreate, "vendor/lib/.git/hooks/post-checkout", "", everything, CodeProtected},
		{OpOpenWrite, "vendor/lib/.git/config", "", everything, CodeProtected},
		{OpCreate, ".git/hooks/pre-commit", "", hooks, CodeExempt}, // granted explicitly, then exempt by "**"
		// The upstream mirror: no grant, not even .git/**, opens it.
		{OpMkdir, ".git/intentfs", "", hooks, CodeProtected},
		{OpSymlink, ".git/intentfs", "", hooks, CodeProtected},
		{OpCreate, ".git/intentfs/upstream.git/refs/intentfs/upstream", "", hooks, CodeProtected},
		{OpCreate, ".git/intentfs/upstream.git/objects/ab/cdef", "", everything, CodeProtected},
		{OpRename, ".git/intentfs", ".git/x", hooks, CodeProtected},
		// git's work state is exempt, at the root and in nested repos.
		{OpCreate, ".git/objects/ab/cdef", "", "", CodeExempt},
		{OpCreate, ".git/objects/pack/tmp_pack_x", "", "", CodeExempt},
		{OpCreate, ".git/objects/info/commit-graph", "", "", CodeExempt},
		{OpRename, ".git/index.lock", ".git/index", "", CodeExempt},
		{OpRename, ".git/HEAD.lock", ".git/HEAD", "", CodeExempt},
		{OpCreate, ".git/refs/heads/topic.lock", "", "", CodeExempt},
		{OpRename, ".git/packed-refs.lock", ".git/packed-refs", "", CodeExempt},
		{OpRename, ".git/packed-refs.new", ".git/packed-refs", "", CodeExempt},
		{OpRename, ".git/index.lock", ".git/index.stash.4242", "", CodeExempt}, // git stash's temporary index
		{OpCreate, ".git/next-index-4242.lock", "", "", CodeExempt},            // git commit <paths>
		{OpCreate, ".git/index.stash.x/config", "", everything, CodeProtected}, // not a file directly in .git
		{OpRename, ".git/index.lock", ".git/index.stash.", "", CodeProtected},  // no pid
		{OpCreate, ".git/logs/refs/heads/topic", "", "", CodeExempt},
		{OpOpenWrite, ".git/COMMIT_EDITMSG", "", "", CodeExempt},
		{OpCreate, ".git/MERGE_HEAD", "", "", CodeExempt},
		{OpCreate, ".git/rebase-merge/done", "", "", CodeExempt},
		{OpCreate, ".git/sequencer/todo", "", "", CodeExempt},
		{OpCreate, ".git/gc.pid", "", "", CodeExempt},
		{OpCreate, ".git/tAbc123", "", "", CodeExempt},
		{OpCreate, ".git/worktrees/w/HEAD", "", "", CodeExempt},
		{OpCreate, ".git/worktrees/w/logs/HEAD", "", "", CodeExempt},
		{OpMkdir, ".git", "", "", CodeExempt},
		{OpMkdir, "vendor/lib/.git", "", "", CodeExempt},
		{OpRmdir, ".git", "", everything, CodeProtected},
		{OpCreate, "src/.gitignore", "", everything, CodeExempt}, // an ordinary file, exempt by "**"
	}
	for _, tt := range tests {
		d := s.Decide(Request{Op: tt.op, Path: tt.path, Path2: tt.path2, Intent: tt.intent})
		if d.Code != tt.code {
			t.Errorf("%s %s %s under %q: %s (%s), want %s", tt.op, tt.path, tt.path2, tt.intent, d.Code, d.Reason, tt.code)
		}
	}
}

// TestGitLockFollowsItsFile: an explicit grant of a git file covers the
// lock file git writes it through.
func TestGitLockFollowsItsFile(t *testing.T) {
	in, _, err := ParseIntents("p.yaml", []byte("active_intents:\n  - id: INT-001\n    name: git config\n    status: IN_PROGRESS\n    owned_scope: [\"**\", \".git/config\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Snapshot{Intents: in}
	for _, p := range []string{".git/config", ".git/config.lock"} {
		if d := s.Decide(Request{Op: OpCreate, Path: p, Intent: "INT-001"}); d.Code != CodeAllowed {
			t.Errorf("%s: %s (%s)", p, d.Code, d.Reason)
		}
	}
	if d := s.Decide(Request{Op: OpCreate, Path: ".git/commondir", Intent: "INT-001"}); d.Code != CodeProtected {
		t.Errorf(".git/commondir: %s", d.Code)
	}
}

// TestUpstreamMirrorIsNeverGranted: a scope naming the whole git
// directory grants its config, but never the daemon's upstream mirror,
// whose content decides what counts as the upstream's.
func TestUpstreamMirrorIsNeverGranted(t *testing.T) {
	in, _, err := ParseIntents("p.yaml", []byte("active_intents:\n  - id: INT-001\n    name: git admin\n    status: IN_PROGRESS\n    owned_scope: [\".git/**\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Snapshot{Intents: in}
	if d := s.Decide(Request{Op: OpCreate, Path: ".git/config", Intent: "INT-001"}); d.Code != CodeAllowed {
		t.Fatalf(".git/config under .git/**: %s (%s)", d.Code, d.Reason)
	}
	for _, p := range []string{".git/intentfs", ".git/intentfs/upstream.git/config", ".git/intentfs/upstream.git/refs/intentfs/upstream"} {
		d := s.Decide(Request{Op: OpCreate, Path: p, Intent: "INT-001"})
		if d.Code != CodeProtected || !strings.Contains(d.Reason, "mirror of the trusted upstream") {
			t.Errorf("%s under .git/**: %s (%s)", p, d.Code, d.Reason)
		}
	}
}

func TestDecideLock(t *testing.T) {
	cases := []struct {
		rel   string
		allow bool
	}{
		{".orchestration/.active_intents.yaml.lock", false},
		{".orchestration/.intentfs.lock", false},
		{".orchestration/agent_trace.jsonl", false},
		{".intentignore", false},
		{".git/intentfs/packed-refs", false},
		{"src/a.go", true},
		{".git/index", true},
		{"../outside", false},
	}
	for _, c := range cases {
		t.Run(c.rel, func(t *testing.T) {
			d := DecideLock(c.rel)
			if d.Allow != c.allow {
				t.Fatalf("DecideLock(%q) = %+v, want allow %v", c.rel, d, c.allow)
			}
			if !d.Allow && d.Reason == "" {
				t.Fatal("a refusal without a reason")
			}
		})
	}
}

// TestProtectedReasonNamesWorktrees: a refused write of a linked
// worktree's records says that git worktree add is refused and what to do
// instead; other protected git files keep their own reason.
func TestProtectedReasonNamesWorktrees(t *testing.T) {
	tests := []struct {
		rel      string
		worktree bool
	}{
		{".git/worktrees/side/locked", true},
		{".git/worktrees/side/gitdir", true},
		{"sub/.git/worktrees/w/commondir", true},
		{".git/config", false},
		{".git/hooks/pre-commit", false},
		{"worktrees/x/gitdir", false},
	}
	for _, tt := range tests {
		r := protectedReason(tt.rel)
		if got := strings.Contains(r, "git worktree add is refused in a mount") && strings.Contains(r, "docs/worktrees.md"); got != tt.worktree {
			t.Errorf("protectedReason(%q) = %q; names worktrees: %v, want %v", tt.rel, r, got, tt.worktree)
		}
		if !strings.HasPrefix(r, tt.rel+" is read-only through the mount") {
			t.Errorf("protectedReason(%q) = %q does not name the path", tt.rel, r)
		}
	}
}
