package sessions

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"

	"github.com/intentfs/intentfs/internal/daemon"
	"github.com/intentfs/intentfs/internal/gitlayout"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

const worktreePolicy = `active_intents:
  - id: INT-001
    name: source work
    status: IN_PROGRESS
    owned_scope: ["src/**"]
  - id: INT-002
    name: everything
    status: IN_PROGRESS
    owned_scope: ["**"]
`

// repoWithWorktree makes, below base, a repository "repo" (the policy and
// a README committed) with a linked worktree "wt1" on branch wt1, all
// owned by the agent's uid as a checkout of the agent's user would be
// (base itself stays root's, as intentfs run requires of the directories
// above a source).
func repoWithWorktree(t *testing.T, base string) (repo, wt string) {
	t.Helper()
	repo, wt = filepath.Join(base, "repo"), filepath.Join(base, "wt1")
	testenv.WriteFile(t, filepath.Join(repo, policy.IntentsFile), worktreePolicy)
	testenv.WriteFile(t, filepath.Join(repo, "README.md"), "human readme\n")
	testenv.WriteFile(t, filepath.Join(repo, "src", "a.go"), "package a\n")
	if err := os.Mkdir(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(base), base} {
		if strings.HasPrefix(d, os.TempDir()+"/") {
			if err := os.Chmod(d, 0o755); err != nil { // the agent must reach the test's directories
				t.Fatal(err)
			}
		}
	}
	testenv.ChownTree(t, repo)
	testenv.ChownTree(t, wt)
	testenv.GitAs(t, repo, "git init -q -b main . && git add -A && git commit -qm base && git worktree add -q -b wt1 ../wt1")
	return repo, wt
}

// TestWorktreeMountRefused: a source whose .git leads outside it in a
// way the mount cannot govern is refused with the reason and the setup
// that works: a submodule checkout's .git file (its git directory's
// config names the checkout as core.worktree), a .git directory with a
// commondir file, a .git file naming another worktree's git directory,
// and one whose git directory lies past a symlink. (A linked worktree laid
// out as git makes one is mounted: see worktree_mount_test.go.)
func TestWorktreeMountRefused(t *testing.T) {
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	cases := []struct {
		name string
		base func(t *testing.T) string
		// source picks the directory to mount.
		source func(t *testing.T, repo, wt string) string
		want   string
	}{
		{"a .git file naming another worktree's git directory", func(t *testing.T) string { return filepath.Dir(testenv.SourceOutsideTmp(t)) },
			func(t *testing.T, repo, _ string) string { return otherWorktreeSource(t, repo) }, "belongs to the worktree at"},
		{"a git directory past a symlink", func(t *testing.T) string { return filepath.Dir(testenv.SourceOutsideTmp(t)) },
			func(t *testing.T, repo, wt string) string {
				link := filepath.Join(filepath.Dir(repo), "link")
				if err := os.Symlink(repo, link); err != nil {
					t.Fatal(err)
				}
				testenv.WriteFile(t, filepath.Join(wt, ".git"), "gitdir: "+filepath.Join(link, ".git", "worktrees", "wt1")+"\n")
				return wt
			}, "a symlink lies on the path"},
		{"submodule checkout", func(t *testing.T) string { return filepath.Dir(testenv.SourceOutsideTmp(t)) },
			func(t *testing.T, repo, _ string) string {
				sub := filepath.Join(repo, "sub")
				testenv.WriteFile(t, filepath.Join(sub, policy.IntentsFile), worktreePolicy)
				if err := os.MkdirAll(filepath.Join(repo, ".git", "modules", "sub"), 0o755); err != nil {
					t.Fatal(err)
				}
				testenv.WriteFile(t, filepath.Join(sub, ".git"), "gitdir: ../.git/modules/sub\n")
				testenv.ChownTree(t, sub)
				return sub
			}, "(a worktree's or a submodule's)"},
		{"a .git directory with a commondir", func(t *testing.T) string { return filepath.Dir(testenv.SourceOutsideTmp(t)) },
			func(t *testing.T, repo, _ string) string {
				src := filepath.Join(filepath.Dir(repo), "src")
				testenv.WriteFile(t, filepath.Join(src, policy.IntentsFile), worktreePolicy)
				testenv.WriteFile(t, filepath.Join(src, ".git", "HEAD"), "ref: refs/heads/main\n")
				testenv.WriteFile(t, filepath.Join(src, ".git", "commondir"), "../../repo/.git\n")
				testenv.ChownTree(t, src)
				return src
			}, "whose commondir file sends git to the repository"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repo, wt := repoWithWorktree(t, tc.base(t))
			src := tc.source(t, repo, wt)
			mnt := t.TempDir()
			d, err := daemon.Start(daemon.Config{Source: src, Mountpoint: mnt, Version: "test",
				Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: mounts.Registry{Dir: t.TempDir()}, Transport: testenv.TestTransport()})
			if err == nil {
				_ = d.Unmount()
				d.Close()
				t.Fatalf("the mount of %s was served: git in it writes %s/.git directly", src, repo)
			}
			if !errors.Is(err, gitlayout.ErrNotOwnGitDir) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), gitlayout.Guide) {
				t.Fatalf("refused, but not for the reason: %v", err)
			}
			t.Logf("refused: %v", err)
		})
	}

	// The command a user types says the same.
	c := testenv.NewCLI(t)
	repo, _ := repoWithWorktree(t, filepath.Dir(testenv.SourceOutsideTmp(t)))
	src := otherWorktreeSource(t, repo)
	out, code := c.Run("mount", src, t.TempDir())
	if code == 0 {
		c.Run("unmount", "--all")
		t.Fatalf("intentfs mount of a source posing as another worktree succeeded:\n%s", out)
	}
	for _, want := range []string{"is a linked worktree", "cannot be governed", "git worktree repair", gitlayout.Guide} {
		if !strings.Contains(out, want) {
			t.Errorf("intentfs mount's refusal lacks %q:\n%s", want, out)
		}
	}
}

// otherWorktreeSource makes a source beside repo whose .git file names
// the git directory of repo's worktree wt1: git would take it for that
// worktree, whose git directory does not name it back.
func otherWorktreeSource(t *testing.T, repo string) string {
	t.Helper()
	src := filepath.Join(filepath.Dir(repo), "other")
	testenv.WriteFile(t, filepath.Join(src, policy.IntentsFile), worktreePolicy)
	testenv.WriteFile(t, filepath.Join(src, ".git"), "gitdir: "+filepath.Join(repo, ".git", "worktrees", "wt1")+"\n")
	testenv.ChownTree(t, src)
	return src
}

// mountRepoForSessions mounts a repository outside /tmp that has a
// linked worktree beside it, all owned by the agent's uid (as the README
// advises for a checkout): the shape in which a session could reach the
// other work tree, and the repository's hooks and config, by their paths.
func mountRepoForSessions(t *testing.T) (e *testenv.Env, wt string) {
	t.Helper()
	testenv.RequireFUSE(t)
	repo, wt := repoWithWorktree(t, filepath.Dir(testenv.SourceOutsideTmp(t)))
	reg := t.TempDir()
	d := testenv.StartDaemonIn(t, repo, t.TempDir(), "", reg)
	return &testenv.Env{T: t, Src: d.Source(), Mnt: d.Mountpoint(), D: d, Reg: reg}, wt
}

// TestSessionHidesOtherWorkTrees: in a sealed session of a repository's
// mount, the repository's linked worktrees elsewhere are hidden like the
// source: the agent cannot write another agent's tree, nor its .git file.
func TestSessionHidesOtherWorkTrees(t *testing.T) {
	// Serial: it starts an agent session, whose mount namespace copies every mount of the other tests (serving them past their unmount until the session ends) and covers each FUSE mount as it starts.
	testenv.Serial(t)
	e, wt := mountRepoForSessions(t)
	script := fmt.Sprintf(`SRC=%[1]s WT=%[2]s
echo "#!/bin/sh" > "$SRC/.git/hooks/post-checkout" && echo HOOK-WRITTEN
echo "# x" >> "$SRC/.git/config" && echo CONFIG-WRITTEN
echo EVIL > "$SRC/README.md" && echo MAIN-TREE-WRITTEN
echo EVIL > "$WT/README.md" && echo OTHER-TREE-WRITTEN
echo "gitdir: /nowhere" > "$WT/.git" && echo OTHER-GITFILE-WRITTEN
ls "$WT" >/dev/null 2>&1 && echo OTHER-TREE-LISTED
echo end`, e.Src, wt)
	out, code := e.RunSession("--intent", "INT-001", "--", "sh", "-c", script)
	t.Logf("exit %d\n%s", code, out)
	if !strings.Contains(out, "end") {
		t.Fatalf("the session did not run its script (exit %d):\n%s", code, out)
	}
	for _, w := range []string{"HOOK-WRITTEN", "CONFIG-WRITTEN", "MAIN-TREE-WRITTEN", "OTHER-TREE-WRITTEN", "OTHER-GITFILE-WRITTEN", "OTHER-TREE-LISTED"} {
		if strings.Contains(out, w) {
			t.Errorf("the session could: %s", w)
		}
	}
	if c, err := os.ReadFile(filepath.Join(wt, "README.md")); err != nil || string(c) != "human readme\n" {
		t.Errorf("the other work tree's README.md is %q (%v)", c, err)
	}
}

// TestSessionRefusedWhenGitIsLinked: a source whose .git became a file
// after it was mounted (a pointer to another worktree's git directory)
// gets no sealed session: the mount does not serve that git directory,
// which lies outside every cover. The session is refused with the
// reason, and nothing it would have written is.
func TestSessionRefusedWhenGitIsLinked(t *testing.T) {
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "")
	repo, _ := repoWithWorktree(t, filepath.Dir(testenv.SourceOutsideTmp(t)))
	testenv.WriteFile(t, filepath.Join(e.Src, ".git"), "gitdir: "+filepath.Join(repo, ".git", "worktrees", "wt1")+"\n")
	script := fmt.Sprintf(`echo "#!/bin/sh" > %[1]s/.git/hooks/post-checkout && echo HOOK-WRITTEN
echo "# x" >> %[1]s/.git/config && echo CONFIG-WRITTEN
echo EVIL > %[1]s/README.md && echo MAIN-TREE-WRITTEN`, repo)
	out, code := e.RunSession("--intent", "INT-001", "--", "sh", "-c", script)
	t.Logf("exit %d\n%s", code, out)
	if code != 125 || !strings.Contains(out, "is a linked worktree") || !strings.Contains(out, gitlayout.Guide) {
		t.Errorf("the session was not refused with the reason (exit %d):\n%s", code, out)
	}
	for _, w := range []string{"HOOK-WRITTEN", "CONFIG-WRITTEN", "MAIN-TREE-WRITTEN"} {
		if strings.Contains(out, w) {
			t.Errorf("the session could: %s", w)
		}
	}
	if _, err := os.Lstat(filepath.Join(repo, ".git", "hooks", "post-checkout")); err == nil {
		t.Errorf("a hook was written in the repository")
	}
}

// TestGitWorktreeAddInMountRefused: git worktree add in a mount would
// make a work tree outside the mount whose commits go through the
// mount's .git with no write of theirs recorded; the worktree's gitdir
// record is refused, and no worktree is left that git would use.
func TestGitWorktreeAddInMountRefused(t *testing.T) {
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	repo, _ := repoWithWorktree(t, filepath.Dir(testenv.SourceOutsideTmp(t)))
	outside := t.TempDir()
	testenv.ChownTree(t, outside)
	os.Chmod(filepath.Dir(outside), 0o755) // the agent must reach the mount, also made there
	d := testenv.StartDaemon(t, repo, t.TempDir(), "INT-002")
	e := &testenv.Env{T: t, Src: d.Source(), Mnt: d.Mountpoint(), D: d}
	mnt := e.Mnt
	for _, target := range []string{filepath.Join(outside, "side"), "inner"} {
		cmd := testenv.CommandIn(mnt, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sh", "-c", "git worktree add -q -b side-$(basename $0) $0", target)
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
		out, err := cmd.CombinedOutput()
		t.Logf("git worktree add %s: %v\n%s", target, err, out)
		if err == nil {
			t.Errorf("git worktree add %s succeeded in the mount", target)
		}
	}
	names, _ := os.ReadDir(filepath.Join(repo, ".git", "worktrees"))
	for _, n := range names {
		if n.Name() == "wt1" {
			continue
		}
		if _, err := os.Stat(filepath.Join(repo, ".git", "worktrees", n.Name(), "gitdir")); err == nil {
			t.Errorf("a worktree %s was recorded in the repository", n.Name())
		}
	}
	// The agent can read why.
	var reasons []string
	for _, r := range e.Records() {
		if g := r.Gov(); g.Event == ledger.EventDenied && strings.HasPrefix(r.Path(), ".git/worktrees/") {
			reasons = append(reasons, g.Reason)
		}
	}
	if len(reasons) == 0 || !strings.Contains(reasons[0], "git worktree add is refused in a mount") {
		t.Errorf("the refusal's recorded reasons: %q", reasons)
	}
	trees := testenv.GitAs(t, repo, "git worktree list --porcelain")
	if strings.Contains(trees, "side") || strings.Contains(trees, "inner") {
		t.Errorf("git lists a worktree made through the mount:\n%s", trees)
	}
}

// TestTwoAgentsOneRepositoryClonePerAgent is the setup docs/worktrees.md
// gives for many agents on one repository: the human's repository, a
// clone per agent owned by the agent's uid, each mounted, each agent in a
// sealed session with its own intent. In parallel, each commits in its
// scope (judged by its own gate, recorded and noted), has a plumbing
// commit of content outside its scope refused, and cannot write the other
// agent's clone or the human's repository (hooks, config, work tree).
func TestTwoAgentsOneRepositoryClonePerAgent(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	c := testenv.NewCLI(t)
	base := filepath.Dir(testenv.SourceOutsideTmp(t))
	repo := filepath.Join(base, "repo")
	clones := []string{filepath.Join(base, "agent1"), filepath.Join(base, "agent2")}
	testenv.WriteFile(t, filepath.Join(repo, policy.IntentsFile), worktreePolicy+`  - id: INT-003
    name: the guide
    status: IN_PROGRESS
    owned_scope: ["docs/**"]
`)
	testenv.WriteFile(t, filepath.Join(repo, ".orchestration", ".gitignore"), "/*\n!/active_intents.yaml\n!/.gitignore\n")
	testenv.WriteFile(t, filepath.Join(repo, "README.md"), "human readme\n")
	testenv.WriteFile(t, filepath.Join(repo, "src", "a.go"), "package a\n")
	testenv.WriteFile(t, filepath.Join(repo, "docs", "guide.md"), "guide\n")
	for _, d := range clones {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testenv.ChownTree(t, base)
	if err := os.Lchown(base, 0, 0); err != nil {
		t.Fatal(err)
	}
	testenv.GitAs(t, repo, "git init -q -b main . && git add -A && git commit -qm base")
	baseCommit := testenv.GitAs(t, repo, "git rev-parse HEAD")
	for i, d := range clones {
		testenv.GitAs(t, d, fmt.Sprintf("git clone -q --no-hardlinks %s . && git switch -q -c agent%d", repo, i+1))
	}
	// The human's repository is the human's: no agent may write it. (The
	// test runs with umask 0: git made it world-writable.)
	if out, err := exec.Command("sh", "-c", `chown -R 0:0 "$0" && chmod -R go-w "$0"`, repo).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}
	reg := t.TempDir()
	envs := make([]*testenv.Env, len(clones))
	for i, d := range clones {
		dm := testenv.StartDaemonIn(t, d, t.TempDir(), "", reg)
		envs[i] = &testenv.Env{T: t, Src: dm.Source(), Mnt: dm.Mountpoint(), D: dm, Reg: reg}
	}

	gitEnv := "export HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@example.com GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@example.com; "
	type agent struct {
		intent, file string
		out          string
		code         int
	}
	agents := []*agent{{intent: "INT-001", file: "src/a.go"}, {intent: "INT-003", file: "docs/guide.md"}}
	done := make(chan struct{}, len(agents))
	for i, a := range agents {
		other := clones[1-i]
		script := gitEnv + fmt.Sprintf(`REPO=%[1]s OTHER=%[2]s
echo "#!/bin/sh" > "$REPO/.git/hooks/post-checkout" && echo HOOK-WRITTEN
echo "# x" >> "$REPO/.git/config" && echo CONFIG-WRITTEN
echo EVIL > "$REPO/README.md" && echo MAIN-TREE-WRITTEN
echo EVIL > "$OTHER/README.md" && echo OTHER-CLONE-WRITTEN
echo "# x" >> "$OTHER/.git/config" && echo OTHER-CLONE-CONF-WRITTEN
blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,README.md && git commit -qm sneaky && echo SNEAKY-COMMITTED
git reset -q HEAD -- README.md
echo "// agent work" >> %[3]s && git add %[3]s && git commit -qm "agent work" && echo COMMITTED
echo end`, repo, other, a.file)
		go func() {
			a.out, a.code = envs[i].RunSession("--intent", a.intent, "--", "sh", "-c", script)
			done <- struct{}{}
		}()
	}
	for range agents {
		<-done
	}
	for i, a := range agents {
		t.Logf("agent %d (exit %d):\n%s", i+1, a.code, a.out)
		if !strings.Contains(a.out, "COMMITTED\nend") {
			t.Errorf("agent %d did not commit its work", i+1)
		}
		for _, w := range []string{"HOOK-WRITTEN", "CONFIG-WRITTEN", "MAIN-TREE-WRITTEN", "OTHER-CLONE-WRITTEN", "OTHER-CLONE-CONF-WRITTEN", "SNEAKY-COMMITTED"} {
			if strings.Contains(a.out, w) {
				t.Errorf("agent %d could: %s", i+1, w)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for i, a := range agents {
		e := envs[i]
		head := testenv.GitAs(t, e.Src, "git rev-parse HEAD")
		r := e.WaitRecord("agent's commit record", func(r *ledger.Record) bool { return r.Gov().Event == ledger.EventCommit && r.Gov().Commit == head })
		if g := r.Gov(); ledger.Str(g.IntentID) != a.intent || g.Session == nil {
			t.Errorf("agent %d's commit record: intent %q, session %+v", i+1, ledger.Str(g.IntentID), g.Session)
		}
		testenv.WaitFor(t, func() bool { _, err := testenv.GitTry(e.Src, "git notes --ref=intentfs show "+head); return err == nil }, "the note of agent's commit")
		out := c.Must("check", "--source", e.Src, baseCommit+"..HEAD")
		if !strings.HasPrefix(out, "OK") {
			t.Errorf("intentfs check of agent %d's branch:\n%s", i+1, out)
		}
	}
	// The human brings both branches and their notes into the repository
	// as docs/worktrees.md says, with the human's own git (which honours
	// a safe.directory for the agents' clones), and checks each branch
	// there, where there is no ledger: the notes account for the commits.
	global := filepath.Join(t.TempDir(), "gitconfig")
	testenv.WriteFile(t, global, fmt.Sprintf("[safe]\n\tdirectory = %s/.git\n\tdirectory = %s/.git\n", clones[0], clones[1]))
	for i, d := range clones {
		name := fmt.Sprintf("agent%d", i+1)
		script := fmt.Sprintf(`git remote add %[1]s %[2]s && git fetch -q %[1]s %[1]s:%[1]s '+refs/notes/intentfs:refs/notes/remotes/%[1]s/intentfs' &&
git notes --ref=intentfs merge -q -s cat_sort_uniq refs/notes/remotes/%[1]s/intentfs`, name, d)
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = repo
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + global,
			"GIT_AUTHOR_NAME=human", "GIT_AUTHOR_EMAIL=human@example.com", "GIT_COMMITTER_NAME=human", "GIT_COMMITTER_EMAIL=human@example.com"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bringing %s's work back: %v\n%s", name, err, out)
		}
	}
	for i := range clones {
		out := c.Must("check", "--source", repo, fmt.Sprintf("main..agent%d", i+1))
		t.Logf("intentfs check main..agent%d in the human's repository:\n%s", i+1, out)
		if !strings.HasPrefix(out, "OK") {
			t.Errorf("intentfs check of agent %d's branch in the human's repository:\n%s", i+1, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "README.md")); string(b) != "human readme\n" {
		t.Errorf("the human's README.md is %q", b)
	}
	if _, err := os.Lstat(filepath.Join(repo, ".git", "hooks", "post-checkout")); err == nil {
		t.Errorf("a hook was written in the human's repository")
	}
}
