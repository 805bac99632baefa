package gitlayout

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckedOut(t *testing.T) {
	write := func(t *testing.T, p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		layout  func(t *testing.T, common string)
		want    func(base string) map[string]Holder
		wantErr bool
	}{
		{"main and two worktrees, one of them ours", func(t *testing.T, c string) {
			write(t, filepath.Join(c, "HEAD"), "ref: refs/heads/main\n")
			write(t, filepath.Join(c, "worktrees", "a", "HEAD"), "ref: refs/heads/a\n")
			write(t, filepath.Join(c, "worktrees", "a", "gitdir"), filepath.Join(filepath.Dir(filepath.Dir(c)), "wt", "a", ".git")+"\n")
			write(t, filepath.Join(c, "worktrees", "own", "HEAD"), "ref: refs/heads/own\n")
		}, func(base string) map[string]Holder {
			return map[string]Holder{"refs/heads/main": {Tree: filepath.Join(base, "repo"), IsMain: true}, "refs/heads/a": {Tree: filepath.Join(base, "wt", "a")}}
		}, false},
		{"a detached worktree and one being added hold nothing", func(t *testing.T, c string) {
			write(t, filepath.Join(c, "HEAD"), "0123456789012345678901234567890123456789\n")
			write(t, filepath.Join(c, "worktrees", "d", "HEAD"), "0123456789012345678901234567890123456789\n")
			if err := os.MkdirAll(filepath.Join(c, "worktrees", "new"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, func(string) map[string]Holder { return map[string]Holder{} }, false},
		{"a HEAD that is a symlink is not followed", func(t *testing.T, c string) {
			write(t, filepath.Join(c, "HEAD"), "ref: refs/heads/main\n")
			write(t, filepath.Join(c, "elsewhere"), "ref: refs/heads/x\n")
			if err := os.MkdirAll(filepath.Join(c, "worktrees", "s"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(c, "elsewhere"), filepath.Join(c, "worktrees", "s", "HEAD")); err != nil {
				t.Fatal(err)
			}
		}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			common := filepath.Join(base, "repo", ".git")
			tt.layout(t, common)
			got, err := CheckedOut(common, filepath.Join(common, "worktrees", "own"))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("CheckedOut = %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.want(base); !maps.Equal(got, want) {
				t.Errorf("CheckedOut = %v, want %v", got, want)
			}
		})
	}
}
