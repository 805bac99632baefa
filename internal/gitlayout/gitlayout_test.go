package gitlayout

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckOwnGitDir(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, base, src string)
		// want is nil for a governable source, else the substrings the
		// error must hold.
		want []string
	}{
		{"no .git", func(*testing.T, string, string) {}, nil},
		{".git directory", func(t *testing.T, _, src string) {
			write(t, filepath.Join(src, ".git", "HEAD"), "ref: refs/heads/main\n")
		}, nil},
		{"linked worktree", func(t *testing.T, base, src string) {
			write(t, filepath.Join(base, "repo", ".git", "worktrees", "wt1", "commondir"), "../..\n")
			write(t, filepath.Join(src, ".git"), "gitdir: "+filepath.Join(base, "repo", ".git", "worktrees", "wt1")+"\n")
		}, []string{"is a linked worktree", "worktrees/wt1, of the repository ", "repo/.git", "git clone --no-hardlinks " + "BASE/repo ", Guide}},
		{"relative gitdir (a submodule)", func(t *testing.T, base, src string) {
			write(t, filepath.Join(base, ".git", "modules", "src", "HEAD"), "ref: refs/heads/main\n")
			write(t, filepath.Join(src, ".git"), "gitdir: ../.git/modules/src\r\n")
		}, []string{"naming the git directory BASE/.git/modules/src (a worktree's or a submodule's)"}},
		{"unreadable .git file", func(t *testing.T, _, src string) { write(t, filepath.Join(src, ".git"), "not a pointer\n") },
			[]string{"does not name a readable git directory", "git clone --no-hardlinks REPOSITORY"}},
		{"symlink", func(t *testing.T, base, src string) {
			if err := os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(src, ".git")); err != nil {
				t.Fatal(err)
			}
		}, []string{"symlink to BASE/elsewhere"}},
		{".git directory with a commondir", func(t *testing.T, base, src string) {
			write(t, filepath.Join(src, ".git", "HEAD"), "ref: refs/heads/main\n")
			write(t, filepath.Join(src, ".git", "commondir"), "../../repo/.git\n")
		}, []string{"has a .git directory whose commondir file sends git to the repository BASE/repo/.git", "git clone --no-hardlinks BASE/repo "}},
		{".git directory with a symlinked commondir", func(t *testing.T, base, src string) {
			write(t, filepath.Join(base, "c"), "/elsewhere\n")
			write(t, filepath.Join(src, ".git", "HEAD"), "ref: refs/heads/main\n")
			if err := os.Symlink(filepath.Join(base, "c"), filepath.Join(src, ".git", "commondir")); err != nil {
				t.Fatal(err)
			}
		}, []string{"has a .git directory with a commondir file (unreadable"}},
		{"fifo", func(t *testing.T, _, src string) {
			if err := syscall.Mkfifo(filepath.Join(src, ".git"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"a named pipe, not a directory"}},
		{"escapes control characters", func(t *testing.T, base, src string) {
			write(t, filepath.Join(src, ".git"), "gitdir: /x\x1b[2Jy\n")
		}, []string{`/x\x1b[2Jy`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			src := filepath.Join(base, "src")
			if err := os.Mkdir(src, 0o755); err != nil {
				t.Fatal(err)
			}
			tt.prepare(t, base, src)
			err := CheckOwnGitDir(src)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckOwnGitDir = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrNotOwnGitDir) {
				t.Fatalf("CheckOwnGitDir = %v, want ErrNotOwnGitDir", err)
			}
			msg := strings.ReplaceAll(err.Error(), base, "BASE")
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			if strings.ContainsRune(msg, 0x1b) {
				t.Errorf("error holds a raw escape: %q", msg)
			}
		})
	}
}

func TestParseGitFile(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"gitdir: /a/b\n", "/a/b", true},
		{"gitdir:../x\r\n", "../x", true},
		{"gitdir: \n", "", false},
		{"ref: refs/heads/main\n", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := ParseGitFile([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseGitFile(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestWorkTrees(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	gitDir := filepath.Join(repo, ".git")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := WorkTrees(repo); err != nil || got != nil {
		t.Fatalf("no worktrees: %v, %v", got, err)
	}
	admin := filepath.Join(gitDir, "worktrees")
	write(t, filepath.Join(admin, "abs", "gitdir"), filepath.Join(base, "wt-abs", ".git")+"\n")
	write(t, filepath.Join(admin, "rel", "gitdir"), "../../../../wt-rel/.git\n")
	write(t, filepath.Join(admin, "empty", "gitdir"), "\n")
	if err := os.MkdirAll(filepath.Join(admin, "stale"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(base, "secret"), "/etc/.git\n")
	if err := os.MkdirAll(filepath.Join(admin, "link"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "secret"), filepath.Join(admin, "link", "gitdir")); err != nil {
		t.Fatal(err)
	}
	got, err := WorkTrees(repo)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{filepath.Join(base, "wt-abs"), filepath.Join(base, "wt-rel")}
	if !slices.Equal(got, want) {
		t.Fatalf("WorkTrees = %q, want %q", got, want)
	}

	// A symlinked worktrees directory, or .git, is refused, not followed.
	other := filepath.Join(base, "other")
	if err := os.MkdirAll(filepath.Join(other, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(admin, filepath.Join(other, ".git", "worktrees")); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(base, "linked")
	if err := os.Mkdir(linked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(gitDir, filepath.Join(linked, ".git")); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{other, linked} {
		if got, err := WorkTrees(src); err == nil {
			t.Errorf("WorkTrees(%s) followed a symlink: %q", src, got)
		}
	}
}
