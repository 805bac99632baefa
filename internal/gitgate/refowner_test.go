package gitgate

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitchange"
	"github.com/intentfs/intentfs/internal/gitlayout"
	"github.com/intentfs/intentfs/policy"
)

func TestOwnedRefChange(t *testing.T) {
	const (
		a = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		b = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	)
	packed := "# pack-refs with: peeled fully-peeled sorted \n" + a + " refs/heads/main\n" + a + " refs/notes/intentfs\n" + a + " refs/tags/v1\n"
	files := map[string]string{
		".git/packed-refs":                   packed,
		".git/refs/heads/wt2":                a + "\n",
		".git/refs/heads/mine":               a + "\n",
		".git/refs/notes/intentfs":           a + "\n",
		".git/new-same":                      a + "\n",
		".git/new-other":                     b + "\n",
		".git/packed-refs.no-notes":          "# pack-refs with: peeled fully-peeled sorted \n" + a + " refs/heads/main\n" + a + " refs/tags/v1\n",
		".git/packed-refs.moved-main":        "# pack-refs with: peeled fully-peeled sorted \n" + b + " refs/heads/main\n" + a + " refs/notes/intentfs\n" + a + " refs/tags/v1\n",
		".git/logs/refs/notes/intentfs":      "0 " + a + " first\n" + a + " " + a + " second\n",
		".git/logs/refs/notes/intentfs.lock": "0 " + a + " first\n" + a + " " + a + " second\n",
		".git/logs/refs/notes/expired":       a + " " + a + " second\n",
		".git/logs/refs/heads/wt2":           "0 " + a + " first\n",
		".git/logs/refs/heads/wt2.lock":      "",
		".git/packed-refs.wt2":               packed[:strings.Index(packed, "\n")+1] + a + " refs/heads/main\n" + a + " refs/heads/wt2\n" + a + " refs/notes/intentfs\n" + a + " refs/tags/v1\n",
	}
	read := func(rel string, max int64) ([]byte, error) {
		s, ok := files[rel]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
	holders := func() (map[string]gitlayout.Holder, error) {
		return map[string]gitlayout.Holder{"refs/heads/main": {Tree: "/srv/repo", IsMain: true}, "refs/heads/wt2": {Tree: "/srv/wt/agent2"}}, nil
	}
	rename := func(from, to string) policy.Request {
		return policy.Request{Op: policy.OpRename, Path: from, Path2: to}
	}
	tests := []struct {
		name     string
		worktree bool
		req      policy.Request
		want     string // "" for allowed, else a part of the reason
	}{
		{"the notes ref moved in a plain mount", false, rename(".git/new-other", ".git/refs/notes/intentfs"), "only the intentfs daemon writes"},
		{"the notes ref renamed to its own value", false, rename(".git/new-same", ".git/refs/notes/intentfs"), ""},
		{"the loose notes ref removed while packed-refs holds it", false, policy.Request{Op: policy.OpUnlink, Path: ".git/refs/notes/intentfs"}, ""},
		{"packed-refs rewritten without the notes", false, rename(".git/packed-refs.no-notes", ".git/packed-refs"), ""}, // the loose file keeps it
		{"the notes reflog appended to", false, policy.Request{Op: policy.OpOpenWrite, Path: ".git/logs/refs/notes/intentfs"}, ""},
		{"the notes reflog truncated", false, policy.Request{Op: policy.OpTruncate, Path: ".git/logs/refs/notes/intentfs"}, "records the history of refs/notes/intentfs"},
		{"the notes reflog removed", false, policy.Request{Op: policy.OpUnlink, Path: ".git/logs/refs/notes/intentfs"}, "records the history of refs/notes/intentfs"},
		{"the notes reflog rewritten without a line", false, rename(".git/logs/refs/notes/expired", ".git/logs/refs/notes/intentfs"), "records the history of refs/notes/intentfs"},
		// git gc's reflog expire rewrites a reflog it expires nothing
		// of: no history is lost.
		{"the notes reflog rewritten whole", false, rename(".git/logs/refs/notes/intentfs.lock", ".git/logs/refs/notes/intentfs"), ""},
		{"the notes directory moved away", false, rename(".git/refs/notes", ".git/old"), "moving refs/notes away"},
		{"the notes ref written in place", false, policy.Request{Op: policy.OpOpenWrite, Path: ".git/refs/notes/intentfs"}, "in place"},
		{"a lock file of the notes ref", false, policy.Request{Op: policy.OpCreate, Path: ".git/refs/notes/intentfs.lock"}, ""},
		{"another branch in a plain mount", false, rename(".git/new-other", ".git/refs/heads/wt2"), ""},
		{"a tag in a plain mount", false, rename(".git/new-other", ".git/refs/tags/v1"), ""},
		{"another worktree's branch moved", true, rename(".git/new-other", ".git/refs/heads/wt2"), "refs/heads/wt2 is checked out in the worktree /srv/wt/agent2"},
		{"another worktree's branch removed", true, policy.Request{Op: policy.OpUnlink, Path: ".git/refs/heads/wt2"}, "checked out in the worktree /srv/wt/agent2"},
		{"the main tree's branch moved in packed-refs", true, rename(".git/packed-refs.moved-main", ".git/packed-refs"), "refs/heads/main is checked out in the main work tree /srv/repo"},
		{"packed-refs gaining a loose branch at its value", true, rename(".git/packed-refs.wt2", ".git/packed-refs"), ""},
		{"another worktree's branch's reflog expired", true, rename(".git/logs/refs/heads/wt2.lock", ".git/logs/refs/heads/wt2"), "records the history of refs/heads/wt2"},
		{"the agent's own branch's reflog expired", true, rename(".git/logs/refs/heads/mine.lock", ".git/logs/refs/heads/mine"), ""},
		{"the agent's own branch", true, rename(".git/new-other", ".git/refs/heads/mine"), ""},
		{"a new tag", true, rename(".git/new-other", ".git/refs/tags/evil"), "is a tag, shared by every work tree"},
		{"another notes ref in a worktree mount", true, rename(".git/new-other", ".git/refs/notes/commits"), "only the intentfs daemon writes"},
		{"the tags directory moved away", true, rename(".git/refs/tags", ".git/old"), "moving refs/tags away"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Source: "/srv/src"}
			if tt.worktree {
				cfg.CommonDir, cfg.WorktreeGitDir, cfg.CheckedOut = "/srv/repo/.git", "/srv/repo/.git/worktrees/mine", holders
			}
			g := New(cfg)
			defer g.Close()
			d := g.ownedRefChange(context.Background(), gitchange.Change{Req: tt.req, Read: read})
			switch {
			case tt.want == "" && d != nil:
				t.Errorf("refused: %s", d.Reason)
			case tt.want != "" && d == nil:
				t.Errorf("allowed, want a refusal saying %q", tt.want)
			case tt.want != "" && !strings.Contains(d.Reason, tt.want):
				t.Errorf("refused with %q, want it to say %q", d.Reason, tt.want)
			}
		})
	}
}

func TestNotesOnlyAdded(t *testing.T) {
	src := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x",
			"GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main", ".")
	git("commit", "-q", "--allow-empty", "-m", "one")
	git("commit", "-q", "--allow-empty", "-m", "two")
	notes := func() string { return git("rev-parse", "refs/notes/intentfs") }
	git("notes", "--ref=intentfs", "add", "-m", "first", "HEAD~1")
	first := notes()
	git("notes", "--ref=intentfs", "add", "-m", "second", "HEAD")
	added := notes()
	git("notes", "--ref=intentfs", "add", "-f", "-m", "forged", "HEAD~1")
	changed := notes()
	git("notes", "--ref=intentfs", "remove", "HEAD")
	removed := notes()
	head := git("rev-parse", "HEAD")
	g := New(Config{Source: src})
	defer g.Close()
	tests := []struct {
		name     string
		old, new string
		want     bool
	}{
		{"a note added", first, added, true},
		{"a note changed", added, changed, false},
		{"a note removed", changed, removed, false},
		{"rewound", added, first, false},
		{"replaced by another history", added, head, false},
		{"not a commit id", added, "HEAD", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := g.notesOnlyAdded(context.Background(), ".git", tt.old, tt.new); got != tt.want {
				t.Errorf("notesOnlyAdded(%s, %s) = %v, want %v", tt.old, tt.new, got, tt.want)
			}
		})
	}
}
