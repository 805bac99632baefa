package runner

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitlayout"
)

func TestRepositoryCovers(t *testing.T) {
	// A user who owns nothing here: the directories above are not theirs.
	agent := User{Name: "agent", Uid: 54321, Gid: 54321}
	write := func(t *testing.T, p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(t *testing.T, p string) {
		t.Helper()
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// worktree records a linked worktree of the repository at src whose
	// work tree is dir.
	worktree := func(t *testing.T, src, name, dir string) {
		write(t, filepath.Join(src, ".git", "worktrees", name, "gitdir"), filepath.Join(dir, ".git")+"\n")
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, base, src, mnt string)
		// want are the covers, relative to base; wantErr a substring of
		// the refusal.
		want    []string
		wantErr string
	}{
		{"no repository", func(*testing.T, string, string, string) {}, nil, ""},
		{"no linked worktrees", func(t *testing.T, _, src, _ string) { mkdir(t, filepath.Join(src, ".git")) }, nil, ""},
		{"worktrees beside and inside", func(t *testing.T, base, src, _ string) {
			for _, n := range []string{"wt1", "wt2"} {
				mkdir(t, filepath.Join(base, n))
				worktree(t, src, n, filepath.Join(base, n))
			}
			worktree(t, src, "inner", filepath.Join(src, "inner")) // hidden with the source
			worktree(t, src, "gone", filepath.Join(base, "gone"))  // pruned by hand
		}, []string{"wt1", "wt2"}, ""},
		{"the mount inside a worktree", func(t *testing.T, base, src, _ string) {
			worktree(t, src, "outer", base)
		}, nil, "a linked worktree of the source's repository"},
		{"a worktree the agent could move", func(t *testing.T, base, src, _ string) {
			mkdir(t, filepath.Join(base, "mine", "wt"))
			if err := os.Chown(filepath.Join(base, "mine"), int(agent.Uid), int(agent.Gid)); err != nil {
				t.Skipf("chown: %v", err)
			}
			worktree(t, src, "wt", filepath.Join(base, "mine", "wt"))
		}, nil, "can be changed by agent"},
		{"a linked worktree as the source", func(t *testing.T, base, src, _ string) {
			write(t, filepath.Join(src, ".git"), "gitdir: "+filepath.Join(base, "repo", ".git", "worktrees", "src")+"\n")
		}, nil, "has a .git file naming the git directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			src, mnt := filepath.Join(base, "src"), filepath.Join(base, "mnt")
			mkdir(t, src)
			mkdir(t, mnt)
			tt.prepare(t, base, src, mnt)
			got, err := RepositoryCovers(src, mnt, agent)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("RepositoryCovers = %q, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, filepath.Join(base, w))
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("RepositoryCovers = %q, want %q", got, want)
			}
		})
	}
	t.Run("refusal matches ErrNotOwnGitDir", func(t *testing.T) {
		src := t.TempDir()
		write(t, filepath.Join(src, ".git"), "gitdir: /elsewhere\n")
		if _, err := RepositoryCovers(src, t.TempDir(), agent); !errors.Is(err, gitlayout.ErrNotOwnGitDir) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestOtherSourceCovers(t *testing.T) {
	tests := []struct {
		name    string
		others  []string
		want    []string
		wantErr string
	}{
		{"none", nil, nil, ""},
		{"other agents' clones", []string{"/srv/agent2", "/srv/agent3"}, []string{"/srv/agent2", "/srv/agent3"}, ""},
		{"inside the own source", []string{"/srv/agent1/vendor/lib"}, nil, ""},
		{"the own source", []string{"/srv/agent1"}, nil, ""},
		{"holds the mount", []string{"/mnt"}, nil, "the source of another intentfs mount"},
		{"the root", []string{"/"}, nil, "the source of another intentfs mount"},
		{"relative", []string{"srv/x"}, nil, "not an absolute clean path"},
		{"unclean", []string{"/srv/../etc"}, nil, "not an absolute clean path"},
	}
	for _, tt := range tests {
		got, err := OtherSourceCovers(tt.others, "/srv/agent1", "/mnt/agent1")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: OtherSourceCovers = %q, %v; want an error with %q", tt.name, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: OtherSourceCovers = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}
