package sessions

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"

	"github.com/intentfs/intentfs/ledger"
)

// refsValues reads the refs names hold in the repository at dir ("" for
// one that does not exist), as the repository's owner sees them.
func refsValues(t *testing.T, dir string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		v, err := testenv.GitTry(dir, "git rev-parse -q --verify "+n)
		if err != nil {
			v = ""
		}
		out[n] = strings.TrimSpace(v)
	}
	return out
}

// notesReflog returns the notes ref's reflog in the git directory gitDir
// ("" if there is none). git appends to it even for an update the gate
// then refuses; what it held before must stay.
func notesReflog(gitDir string) string {
	b, _ := os.ReadFile(filepath.Join(gitDir, "logs", "refs", "notes", "intentfs"))
	return string(b)
}

// notesAttack is what an agent tries against the audit trail git
// carries: remove or rewrite its commit's note, delete or move the notes
// ref, loose and then packed, and wipe its reflog. git pack-refs itself, which changes no ref's value, must
// keep working.
const notesAttack = `git notes --ref=intentfs remove HEAD && echo NOTE-REMOVED
git notes --ref=intentfs add -f -m forged HEAD && echo NOTE-REWRITTEN
git update-ref -d refs/notes/intentfs && echo NOTES-DELETED
git update-ref refs/notes/intentfs HEAD && echo NOTES-MOVED
git pack-refs --all && echo PACKED
git update-ref -d refs/notes/intentfs && echo PACKED-NOTES-DELETED
git reflog expire --expire=now --all
rm -f .git/logs/refs/notes/intentfs && echo NOTES-REFLOG-REMOVED
echo "# nothing" > .git/packed-refs.new && mv .git/packed-refs.new .git/packed-refs && echo PACKED-REFS-EMPTIED
echo end
`

var notesEscapes = []string{"NOTE-REMOVED", "NOTE-REWRITTEN", "NOTES-DELETED", "NOTES-MOVED", "PACKED-NOTES-DELETED", "NOTES-REFLOG-REMOVED", "PACKED-REFS-EMPTIED"}

// TestGateKeepsNotesRefInPlainMount: in a clone's mount, a sealed agent
// cannot delete or move refs/notes/intentfs, loose or packed, nor wipe
// its reflog; the notes of its commit survive.
func TestGateKeepsNotesRefInPlainMount(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	_, e, _, _ := testenv.GateRepo(t)
	if err := os.Chown(filepath.Dir(e.Src), 0, 0); err != nil {
		t.Fatal(err)
	}
	out, code := e.RunSession("--intent", "INT-001", "--", "sh", "-c", worktreeGitEnv+"cd "+e.Mnt+" && echo 'package api // x' > src/x.go && git add src/x.go && git commit -qm x")
	if code != 0 {
		t.Fatalf("the agent's commit failed (%d):\n%s", code, out)
	}
	head := strings.TrimSpace(testenv.GitAs(t, e.Src, "git rev-parse HEAD"))
	testenv.WaitFor(t, func() bool { _, err := testenv.GitTry(e.Src, "git notes --ref=intentfs show "+head); return err == nil }, "the note of the agent's commit")
	before := refsValues(t, e.Src, "refs/notes/intentfs")
	reflog := notesReflog(filepath.Join(e.Src, ".git"))

	out, code = e.RunSession("--intent", "INT-001", "--", "sh", "-c", worktreeGitEnv+"cd "+e.Mnt+"\n"+notesAttack)
	t.Logf("exit %d\n%s", code, out)
	if !strings.Contains(out, "PACKED\n") || !strings.Contains(out, "end") {
		t.Errorf("git pack-refs, which moves no ref, failed in the mount")
	}
	for _, w := range notesEscapes {
		if strings.Contains(out, w) {
			t.Errorf("the agent could: %s", w)
		}
	}
	if after := refsValues(t, e.Src, "refs/notes/intentfs"); after["refs/notes/intentfs"] != before["refs/notes/intentfs"] {
		t.Errorf("refs/notes/intentfs moved: %q, was %q", after, before)
	}
	if _, err := testenv.GitTry(e.Src, "git notes --ref=intentfs show "+head); err != nil {
		t.Errorf("the note of the agent's commit is gone: %v", err)
	}
	if got := notesReflog(filepath.Join(e.Src, ".git")); !strings.HasPrefix(got, reflog) {
		t.Errorf("the notes ref's reflog lost entries: %q, was %q", got, reflog)
	}
	e.WaitRecord("a denial naming the notes ref", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventDenied && strings.Contains(r.Gov().Reason, "refs/notes/intentfs")
	})
}

// TestWorktreeAgentMovesOnlyItsOwnRefs: two worktrees of one repository;
// the agent of the first, in a sealed session of its mount, may create,
// move and delete refs of its own, but not move or delete the branch the
// other worktree or the main tree has checked out (loose or packed), not
// touch the tags, and not the notes: each refusal names the owner.
func TestWorktreeAgentMovesOnlyItsOwnRefs(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	repo, wt1 := repoWithWorktree(t, filepath.Dir(testenv.SourceOutsideTmp(t)))
	wt2 := filepath.Join(filepath.Dir(repo), "wt2")
	if err := os.Mkdir(wt2, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.ChownTree(t, wt2)
	testenv.GitAs(t, repo, "git worktree add -q -b wt2 ../wt2 && git tag v1")
	e := mountWorktree(t, wt1, t.TempDir())

	out, code := e.RunSession("--intent", "INT-002", "--", "sh", "-c", worktreeGitEnv+`echo w >> notes.txt && git add notes.txt && git commit -qm "agent work" && echo COMMITTED
git branch mine HEAD~1 && git branch -f mine HEAD && git update-ref -d refs/heads/mine && echo OWN-REF-OK`)
	t.Logf("exit %d\n%s", code, out)
	if !strings.Contains(out, "COMMITTED\nOWN-REF-OK") {
		t.Fatalf("the agent could not commit or manage a branch of its own")
	}
	head := checkWorktreeCommit(t, e, "INT-002")
	refs := []string{"refs/heads/main", "refs/heads/wt2", "refs/tags/v1", "refs/tags/evil", "refs/notes/intentfs"}
	before := refsValues(t, repo, refs...)
	reflog := notesReflog(filepath.Join(repo, ".git"))
	wt2Log, _ := os.ReadFile(filepath.Join(repo, ".git", "logs", "refs", "heads", "wt2"))
	wt2Reflog := string(wt2Log)

	out, code = e.RunSession("--intent", "INT-002", "--", "sh", "-c", worktreeGitEnv+`git update-ref refs/heads/wt2 HEAD && echo OTHER-BRANCH-MOVED
git branch -f main HEAD && echo MAIN-MOVED
git update-ref -d refs/heads/wt2 && echo OTHER-BRANCH-DELETED
git tag -f v1 HEAD && echo TAG-MOVED
git tag -d v1 && echo TAG-DELETED
git tag evil && echo TAG-CREATED
git pack-refs --all && echo PACKED
git update-ref refs/heads/wt2 HEAD && echo PACKED-OTHER-BRANCH-MOVED
git update-ref -d refs/heads/main && echo PACKED-MAIN-DELETED
git tag -d v1 && echo PACKED-TAG-DELETED
`+notesAttack)
	t.Logf("exit %d\n%s", code, out)
	if !strings.Contains(out, "PACKED\n") || !strings.Contains(out, "end") {
		t.Errorf("git pack-refs, which moves no ref, failed in the worktree's mount")
	}
	for _, w := range append([]string{"OTHER-BRANCH-MOVED", "MAIN-MOVED", "OTHER-BRANCH-DELETED", "TAG-MOVED", "TAG-DELETED", "TAG-CREATED",
		"PACKED-OTHER-BRANCH-MOVED", "PACKED-MAIN-DELETED", "PACKED-TAG-DELETED"}, notesEscapes...) {
		if strings.Contains(out, w) {
			t.Errorf("the agent could: %s", w)
		}
	}
	if after := refsValues(t, repo, refs...); !maps.Equal(after, before) {
		t.Errorf("refs the agent does not own moved:\n now %v\n was %v", after, before)
	}
	if got, _ := os.ReadFile(filepath.Join(repo, ".git", "logs", "refs", "heads", "wt2")); !strings.HasPrefix(string(got), wt2Reflog) || wt2Reflog == "" {
		t.Errorf("the reflog of refs/heads/wt2 lost entries: %q, was %q", got, wt2Reflog)
	}
	if got := notesReflog(filepath.Join(repo, ".git")); !strings.HasPrefix(got, reflog) {
		t.Errorf("the notes ref's reflog lost entries: %q, was %q", got, reflog)
	}
	if _, err := testenv.GitTry(repo, "git notes --ref=intentfs show "+head); err != nil {
		t.Errorf("the note of the agent's commit is gone: %v", err)
	}
	for _, want := range []string{"refs/heads/wt2 is checked out in the worktree " + wt2, "refs/heads/main is checked out in the main work tree " + repo, "refs/tags/v1"} {
		e.WaitRecord("a denial saying "+want, func(r *ledger.Record) bool {
			return r.Gov().Event == ledger.EventDenied && strings.Contains(r.Gov().Reason, want)
		})
	}
}
