package gitlayout

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlaceOf(t *testing.T) {
	tests := []struct {
		path string
		want Place
	}{
		{"", InGitDir},
		{"HEAD", InGitDir},
		{"HEAD.lock", InGitDir},
		{"index", InGitDir},
		{"index.lock", InGitDir},
		{"ORIG_HEAD", InGitDir},
		{"MERGE_HEAD", InGitDir},
		{"rebase-merge/done", InGitDir},
		{"sequencer/todo", InGitDir},
		{"config.worktree", InGitDir},
		{"logs/HEAD", InGitDir},
		{"logs/HEAD.lock", InGitDir},
		{"refs/bisect/bad", InGitDir},
		{"refs/worktree/x", InGitDir},
		{"refs/rewritten/onto", InGitDir},
		{"logs/refs/worktree/x", InGitDir},
		{"info/sparse-checkout", InGitDir},
		{"commondir", Hidden},
		{"commondir.lock", Hidden},
		{"gitdir", Hidden},
		{"objects", InCommonDir},
		{"objects/ab/cdef", InCommonDir},
		{"objects/pack/tmp_pack_x", InCommonDir},
		{"refs", InCommonDir},
		{"refs/heads/main", InCommonDir},
		{"refs/heads/main.lock", InCommonDir},
		{"refs/bisectx", InCommonDir},
		{"refs/notes/intentfs", InCommonDir},
		{"packed-refs", InCommonDir},
		{"packed-refs.lock", InCommonDir},
		{"packed-refs.new", InCommonDir},
		{"config", InCommonDir},
		{"config.lock", InCommonDir},
		{"hooks/pre-commit", InCommonDir},
		{"info", InCommonDir},
		{"info/exclude", InCommonDir},
		{"logs", InCommonDir},
		{"logs/refs/heads/main", InCommonDir},
		{"worktrees/wt1/HEAD", InCommonDir},
		{"shallow", InCommonDir},
		{"config/x", InGitDir}, // config is a file of the common directory, nothing below it
	}
	for _, tt := range tests {
		if got := PlaceOf(tt.path); got != tt.want {
			t.Errorf("PlaceOf(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
	for _, d := range []string{"", "refs", "logs", "logs/refs", "info"} {
		if !MixedDir(d) {
			t.Errorf("MixedDir(%q) = false", d)
		}
	}
	for _, d := range []string{"objects", "refs/heads", "hooks", "worktrees"} {
		if MixedDir(d) {
			t.Errorf("MixedDir(%q) = true", d)
		}
	}
}

// linkedWorktree lays out, below base, a repository's .git and a linked
// worktree "wt" as git worktree add makes them.
func linkedWorktree(t *testing.T, base string) (wt, gitDir, common string) {
	t.Helper()
	common = filepath.Join(base, "repo", ".git")
	gitDir = filepath.Join(common, "worktrees", "wt")
	wt = filepath.Join(base, "wt")
	write(t, filepath.Join(common, "HEAD"), "ref: refs/heads/main\n")
	for _, d := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(common, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(gitDir, "HEAD"), "ref: refs/heads/wt\n")
	write(t, filepath.Join(gitDir, "commondir"), "../..\n")
	write(t, filepath.Join(gitDir, "gitdir"), filepath.Join(wt, ".git")+"\n")
	write(t, filepath.Join(wt, ".git"), "gitdir: "+gitDir+"\n")
	return wt, gitDir, common
}

func TestResolveWorktree(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, base, wt, gitDir string) string
		// want is nil for a worktree that resolves, else the substrings
		// the error must hold.
		want []string
	}{
		{"laid out by git", func(_ *testing.T, _, wt, _ string) string { return wt }, nil},
		{"relative gitdir", func(t *testing.T, _, wt, _ string) string {
			write(t, filepath.Join(wt, ".git"), "gitdir: ../repo/.git/worktrees/wt\n")
			return wt
		}, nil},
		{"another worktree's git directory", func(t *testing.T, base, _, gitDir string) string {
			src := filepath.Join(base, "src")
			write(t, filepath.Join(src, ".git"), "gitdir: "+gitDir+"\n")
			return src
		}, []string{"belongs to the worktree at BASE/wt, not to BASE/src", "git worktree repair", Guide}},
		{"a symlink on the way", func(t *testing.T, base, wt, _ string) string {
			if err := os.Symlink(filepath.Join(base, "repo"), filepath.Join(base, "link")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(wt, ".git"), "gitdir: "+filepath.Join(base, "link", ".git", "worktrees", "wt")+"\n")
			return wt
		}, []string{"a symlink lies on the path"}},
		{"a symlinked gitdir file", func(t *testing.T, base, wt, gitDir string) string {
			write(t, filepath.Join(base, "back"), filepath.Join(wt, ".git")+"\n")
			if err := os.Remove(filepath.Join(gitDir, "gitdir")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(base, "back"), filepath.Join(gitDir, "gitdir")); err != nil {
				t.Fatal(err)
			}
			return wt
		}, []string{"reading BASE/repo/.git/worktrees/wt/gitdir"}},
		{"no objects in the common directory", func(t *testing.T, base, wt, _ string) string {
			if err := os.Remove(filepath.Join(base, "repo", ".git", "objects")); err != nil {
				t.Fatal(err)
			}
			return wt
		}, []string{"not laid out as a git repository: objects"}},
		{"a reftable repository", func(t *testing.T, base, wt, _ string) string {
			if err := os.Mkdir(filepath.Join(base, "repo", ".git", "reftable"), 0o755); err != nil {
				t.Fatal(err)
			}
			return wt
		}, []string{"keeps its refs in reftable"}},
		{"a submodule's .git file", func(t *testing.T, base, _, _ string) string {
			src := filepath.Join(base, "sub")
			write(t, filepath.Join(base, "repo", ".git", "modules", "sub", "HEAD"), "ref: refs/heads/main\n")
			write(t, filepath.Join(src, ".git"), "gitdir: ../repo/.git/modules/sub\n")
			return src
		}, []string{"(a worktree's or a submodule's)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			wt, gitDir, common := linkedWorktree(t, base)
			src := tt.prepare(t, base, wt, gitDir)
			w, err := ResolveWorktree(src)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("ResolveWorktree = %v", err)
				}
				defer w.Close()
				if w.GitDir != gitDir || w.CommonDir != common || w.MainTree() != filepath.Join(base, "repo") {
					t.Errorf("resolved %+v, main tree %s", w, w.MainTree())
				}
				return
			}
			if err == nil {
				w.Close()
				t.Fatalf("ResolveWorktree resolved %s", src)
			}
			if !errors.Is(err, ErrNotOwnGitDir) {
				t.Errorf("the error does not match ErrNotOwnGitDir: %v", err)
			}
			msg := strings.ReplaceAll(err.Error(), base, "BASE")
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
		})
	}
	// A source with a .git directory of its own is no worktree.
	base := t.TempDir()
	write(t, filepath.Join(base, ".git", "HEAD"), "ref: refs/heads/main\n")
	if w, err := ResolveWorktree(base); w != nil || err != nil {
		t.Errorf("ResolveWorktree of a repository = %+v, %v", w, err)
	}
}
