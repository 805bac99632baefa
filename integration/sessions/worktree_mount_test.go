package sessions

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"

	"github.com/intentfs/intentfs/ledger"
)

// worktreeGitEnv is the git environment of an agent's script in a
// session: no configuration of the host's, a name to commit with.
const worktreeGitEnv = "export HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@example.com GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@example.com; "

// mountWorktree mounts the linked worktree wt of a repository, for
// sessions, with the registry reg.
func mountWorktree(t *testing.T, wt, reg string) *testenv.Env {
	t.Helper()
	d := testenv.StartDaemonIn(t, wt, t.TempDir(), "", reg)
	return &testenv.Env{T: t, Src: d.Source(), Mnt: d.Mountpoint(), D: d, Reg: reg}
}

// worktreeAgentScript is what an agent of the reproduction
// tries in its session: write the repository's hook and config and the
// main tree by their paths, sneak out-of-scope content into a commit
// with git's plumbing, then commit its own work with git.
func worktreeAgentScript(repo, file string) string {
	return worktreeGitEnv + fmt.Sprintf(`REPO=%[1]s
echo "#!/bin/sh" > "$REPO/.git/hooks/post-checkout" && echo HOOK-WRITTEN
echo "# x" >> "$REPO/.git/config" && echo CONFIG-WRITTEN
echo EVIL > "$REPO/README.md" && echo MAIN-TREE-WRITTEN
echo "#!/bin/sh" > .git/hooks/post-checkout && echo MOUNT-HOOK-WRITTEN
echo "gitdir: /nowhere" > .git/commondir && echo COMMONDIR-WRITTEN
blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,README.md && git commit -qm sneaky && echo SNEAKY-COMMITTED
git reset -q HEAD -- README.md
git status --short >/dev/null && echo STATUS-OK
echo "// agent work" >> %[2]s && git add %[2]s && git commit -qm "agent work" && echo COMMITTED
echo end`, repo, file)
}

var worktreeEscapes = []string{"HOOK-WRITTEN", "CONFIG-WRITTEN", "MAIN-TREE-WRITTEN", "MOUNT-HOOK-WRITTEN", "COMMONDIR-WRITTEN", "SNEAKY-COMMITTED"}

// checkWorktreeCommit checks that the agent's commit at the head of e's
// source was judged: a commit record with the session's intent, and a
// note.
func checkWorktreeCommit(t *testing.T, e *testenv.Env, intent string) string {
	t.Helper()
	head := strings.TrimSpace(testenv.GitAs(t, e.Src, "git rev-parse HEAD"))
	r := e.WaitRecord("the agent's commit record", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventCommit && r.Gov().Commit == head
	})
	if g := r.Gov(); ledger.Str(g.IntentID) != intent || g.Session == nil {
		t.Errorf("the commit record: intent %q, session %+v", ledger.Str(g.IntentID), g.Session)
	}
	testenv.WaitFor(t, func() bool { _, err := testenv.GitTry(e.Src, "git notes --ref=intentfs show "+head); return err == nil }, "the note of the agent's commit")
	return head
}

// TestWorktreeMountGovernsGitDir is the reproduction: a mount of
// a linked worktree presents the repository's git directory as its own
// .git, governed; in a sealed session the agent commits its work through
// the gate (a commit record, a note), and can write neither the
// repository's hooks and config nor the main work tree by their paths,
// nor the view's own hooks or commondir, nor commit content outside its
// scope with git's plumbing.
func TestWorktreeMountGovernsGitDir(t *testing.T) {
	// Serial: it starts an agent session, whose mount namespace copies every mount of the other tests (serving them past their unmount until the session ends) and covers each FUSE mount as it starts.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	repo, wt := repoWithWorktree(t, filepath.Dir(testenv.SourceOutsideTmp(t)))
	e := mountWorktree(t, wt, t.TempDir())
	if fi, err := os.Lstat(filepath.Join(e.Mnt, ".git")); err != nil || !fi.IsDir() {
		t.Fatalf("the mount's .git is not a directory: %v %v", fi, err)
	}
	out, code := e.RunSession("--intent", "INT-001", "--", "sh", "-c", worktreeAgentScript(repo, "src/a.go"))
	t.Logf("exit %d\n%s", code, out)
	if !strings.Contains(out, "STATUS-OK\n") || !strings.Contains(out, "COMMITTED\nend") {
		t.Fatalf("the agent could not use git in the worktree's mount")
	}
	for _, w := range worktreeEscapes {
		if strings.Contains(out, w) {
			t.Errorf("the session could: %s", w)
		}
	}
	checkWorktreeCommit(t, e, "INT-001")
	if b, _ := os.ReadFile(filepath.Join(repo, "README.md")); string(b) != "human readme\n" {
		t.Errorf("the main tree's README.md is %q", b)
	}
	for _, p := range []string{filepath.Join(repo, ".git", "hooks", "post-checkout")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	// The main work tree's branch did not move, and the worktree's
	// commit is on its own branch in the shared repository.
	if got := testenv.GitAs(t, repo, "git log --format=%s -1 main"); strings.TrimSpace(got) != "base" {
		t.Errorf("main's head is %q", got)
	}
	if got := testenv.GitAs(t, repo, "git log --format=%s -1 wt1"); strings.TrimSpace(got) != "agent work" {
		t.Errorf("wt1's head is %q", got)
	}
	// The human, root, who owns neither the worktree nor the repository,
	// uses git in the mount too: the kernel reads .git's ACL for a caller
	// who is not its owner, before any lookup below it.
	gitInMountAsRoot(t, e.Mnt, "status", "--short")
	if got := gitInMountAsRoot(t, e.Mnt, "log", "--format=%s", "-1"); strings.TrimSpace(got) != "agent work" {
		t.Errorf("git log as root in the mount shows %q", got)
	}
}

// TestTwoAgentsTwoWorktrees: two worktrees of one repository, each
// mounted with its own intent, two sealed agents committing in parallel:
// each commit is judged by its own mount's gate and noted; neither agent
// can write the other's tree, the main tree, or the shared .git by its
// path; intentfs check on a fresh clone, with the notes fetched,
// accounts for both branches.
func TestTwoAgentsTwoWorktrees(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	c := testenv.NewCLI(t)
	repo, wt1 := repoWithWorktree(t, filepath.Dir(testenv.SourceOutsideTmp(t)))
	wt2 := filepath.Join(filepath.Dir(repo), "wt2")
	if err := os.Mkdir(wt2, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.ChownTree(t, wt2)
	testenv.GitAs(t, repo, "git worktree add -q -b wt2 ../wt2")
	baseCommit := strings.TrimSpace(testenv.GitAs(t, repo, "git rev-parse main"))
	reg := t.TempDir()
	envs := []*testenv.Env{mountWorktree(t, wt1, reg), mountWorktree(t, wt2, reg)}
	type agent struct {
		intent, file, other string
		out                 string
		code                int
	}
	agents := []*agent{{intent: "INT-001", file: "src/a.go", other: wt2}, {intent: "INT-002", file: "notes.txt", other: wt1}}
	done := make(chan struct{}, len(agents))
	for i, a := range agents {
		script := fmt.Sprintf(`echo EVIL > %[1]s/README.md && echo OTHER-TREE-WRITTEN
echo "gitdir: /nowhere" > %[1]s/.git && echo OTHER-GITFILE-WRITTEN
`, a.other) + worktreeAgentScript(repo, a.file)
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
		escapes := append([]string{"OTHER-TREE-WRITTEN", "OTHER-GITFILE-WRITTEN"}, worktreeEscapes...)
		if a.intent == "INT-002" {
			escapes = escapes[:len(escapes)-1] // README.md is in its scope
		}
		for _, w := range escapes {
			if strings.Contains(a.out, w) {
				t.Errorf("agent %d could: %s", i+1, w)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for i, a := range agents {
		checkWorktreeCommit(t, envs[i], a.intent)
	}
	for _, d := range []string{repo, wt1, wt2} {
		if b, _ := os.ReadFile(filepath.Join(d, "README.md")); string(b) != "human readme\n" {
			t.Errorf("%s/README.md is %q", d, b)
		}
	}
	for i, wt := range []string{wt1, wt2} {
		out := c.Must("check", "--source", wt, baseCommit+"..HEAD")
		if !strings.HasPrefix(out, "OK") {
			t.Errorf("intentfs check of agent %d's worktree against its ledger:\n%s", i+1, out)
		}
	}
	// A fresh clone, with the notes fetched: the notes account for both
	// branches.
	clone := filepath.Join(filepath.Dir(repo), "clone")
	if err := os.Mkdir(clone, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.ChownTree(t, clone)
	testenv.GitAs(t, clone, "git clone -q --no-hardlinks "+repo+" . && git fetch -q origin refs/notes/intentfs:refs/notes/intentfs wt1:wt1 wt2:wt2")
	for _, b := range []string{"wt1", "wt2"} {
		out := c.Must("check", "--source", clone, baseCommit+".."+b)
		t.Logf("intentfs check %s in a fresh clone:\n%s", b, out)
		if !strings.HasPrefix(out, "OK") {
			t.Errorf("intentfs check of %s in a fresh clone:\n%s", b, out)
		}
	}
}

// TestGitWorktreeAddInWorktreeMountRefused: git worktree add in a
// worktree's mount would make a work tree outside the mount; it is
// refused, and the agent can read why.
func TestGitWorktreeAddInWorktreeMountRefused(t *testing.T) {
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	repo, wt := repoWithWorktree(t, filepath.Dir(testenv.SourceOutsideTmp(t)))
	outside := t.TempDir()
	testenv.ChownTree(t, outside)
	if err := os.Chmod(filepath.Dir(outside), 0o755); err != nil { // the agent must reach it
		t.Fatal(err)
	}
	e := mountWorktree(t, wt, t.TempDir())
	out, err := testenv.GitTry(e.Mnt, "git worktree add -q -b side "+filepath.Join(outside, "side"))
	t.Logf("git worktree add: %v\n%s", err, out)
	if err == nil {
		t.Errorf("git worktree add succeeded in the worktree's mount")
	}
	if trees := testenv.GitAs(t, repo, "git worktree list --porcelain"); strings.Contains(trees, "side") {
		t.Errorf("git lists a worktree made through the mount:\n%s", trees)
	}
	var reasons []string
	for _, r := range e.Records() {
		if g := r.Gov(); g.Event == ledger.EventDenied && strings.HasPrefix(r.Path(), ".git/worktrees/") {
			reasons = append(reasons, g.Reason)
		}
	}
	if len(reasons) == 0 || !strings.Contains(reasons[0], "git worktree add is refused in a mount") {
		t.Errorf("the refusal's recorded reasons: %q", reasons)
	}
}

// TestWorktreeUnderTmpInSession: a worktree whose repository lies under
// /tmp, which a session's private /tmp hides: git in the session reaches
// the repository through the mount, and commits through the gate.
func TestWorktreeUnderTmpInSession(t *testing.T) {
	// Serial: it starts an agent session, whose mount namespace copies every mount of the other tests (serving them past their unmount until the session ends) and covers each FUSE mount as it starts.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	_, wt := repoWithWorktree(t, t.TempDir())
	e := mountWorktree(t, wt, t.TempDir())
	out, code := e.RunSession("--intent", "INT-001", "--", "sh", "-c", worktreeGitEnv+
		`git status --short >/dev/null && echo STATUS-OK; echo "// agent work" >> src/a.go && git add src/a.go && git commit -qm "agent work" && echo COMMITTED`)
	t.Logf("exit %d\n%s", code, out)
	if !strings.Contains(out, "STATUS-OK\nCOMMITTED") {
		t.Fatalf("git did not work in a session of a worktree under /tmp")
	}
	checkWorktreeCommit(t, e, "INT-001")
}

// TestWorktreeMountSeesSharedRepositoryChanges: the repository a
// worktree's mount serves as its .git is changed outside the mount (the
// human commits in the main work tree and packs the refs): git in the
// mount sees the change, as git in the worktree itself would.
func TestWorktreeMountSeesSharedRepositoryChanges(t *testing.T) {
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	repo, wt := repoWithWorktree(t, filepath.Dir(testenv.SourceOutsideTmp(t)))
	mnt := t.TempDir()
	if err := os.Chmod(filepath.Dir(mnt), 0o755); err != nil { // the agent must reach the mount
		t.Fatal(err)
	}
	d := testenv.StartDaemonIn(t, wt, mnt, "INT-001", t.TempDir())
	if out, err := testenv.GitTry(d.Mountpoint(), "git pack-refs --all; git rev-parse main && cat .git/packed-refs"); err != nil {
		t.Fatalf("git in the mount: %v\n%s", err, out)
	}
	for i := range 3 {
		testenv.GitAs(t, repo, fmt.Sprintf("echo %d >> notes.txt && git add notes.txt && git commit -qm 'human %d' && git tag -a -m t human-%d && git pack-refs --all", i, i, i))
		// The mount looks the files up (the kernel keeps what it found).
		if out, err := testenv.GitTry(d.Mountpoint(), "stat -c %s .git/packed-refs .git/refs/heads && git rev-parse main"); err != nil {
			t.Fatalf("git in the mount: %v\n%s", err, out)
		}
	}
	want := strings.TrimSpace(testenv.GitAs(t, repo, "git rev-parse main"))
	testenv.WaitFor(t, func() bool {
		out, err := testenv.GitTry(d.Mountpoint(), "git rev-parse main human-2^{}")
		return err == nil && strings.Fields(out)[0] == want
	}, "git in the mount to see the human's commit on main")
	// What the kernel keeps of the repository's files follows them: the
	// size a stat in the mount reports is the file's.
	fi, err := os.Stat(filepath.Join(repo, ".git", "packed-refs"))
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, func() bool {
		out, err := testenv.GitTry(d.Mountpoint(), "stat -c %s .git/packed-refs")
		return err == nil && strings.TrimSpace(out) == fmt.Sprint(fi.Size())
	}, "the mount's size of packed-refs to be the file's")
}
