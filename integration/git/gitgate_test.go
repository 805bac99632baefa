package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// TestCommitGate: a commit made in the mount that check would fail is
// refused when git moves the branch, with the reason in .intentfs/denials;
// every other way of moving a branch to a crafted commit is refused too;
// an ordinary commit passes, is checked clean and gets a commit record and
// a note that amend keeps.
func TestCommitGate(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	c, e, _, base := testenv.GateRepo(t)
	src, mnt := e.Src, e.Mnt
	head := func() string { return testenv.GitAs(t, src, "git rev-parse HEAD") }

	// A commit of content never written through the mount, made with
	// git's plumbing, as the agent would run it.
	out, err := testenv.GitTry(mnt, "blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,README.md && git commit -qm tidy")
	t.Logf("plumbing commit in the mount:\n%s", out)
	if err == nil || head() != base {
		t.Fatalf("the plumbing commit was not refused (err %v, HEAD %s):\n%s", err, head(), out)
	}
	den, _ := os.ReadFile(filepath.Join(mnt, ".intentfs", "denials"))
	t.Logf(".intentfs/denials:\n%s", den)
	if !testenv.LineWith(string(den), "COMMIT_NOT_ACCOUNTED", "README.md (outside the scope of INT-001)", "never written through the mount") {
		t.Fatalf("the denial does not say why:\n%s", den)
	}
	testenv.GitAs(t, mnt, "git reset -q HEAD -- README.md")

	// Crafting the commit with plumbing and moving the branch by hand.
	crafted := testenv.GitAs(t, mnt, "blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,README.md && git commit-tree -p HEAD -m x $(git write-tree)")
	testenv.GitAs(t, mnt, "git reset -q HEAD -- README.md")
	merge := testenv.GitAs(t, mnt, "git commit-tree -p HEAD -p origin/other -m evil "+crafted+"^{tree}")
	for _, attack := range []string{
		"git update-ref refs/heads/main " + crafted,
		"git reset -q --soft " + crafted,
		"git merge -q --ff-only " + crafted,
		"git update-ref refs/heads/main " + merge, // an "evil" merge: content no parent has
		"git update-ref refs/heads/side " + crafted,
		"git checkout -q --detach " + crafted,
		"echo " + crafted + " > .git/refs/heads/main",
		"echo " + crafted + " > .git/refs/heads/main.new && mv .git/refs/heads/main.new .git/refs/heads/main",
		"printf '%s refs/heads/side\\n' " + crafted + " > .git/packed-refs.new && mv .git/packed-refs.new .git/packed-refs",
		"git update-ref refs/tags/t " + crafted + " && git symbolic-ref HEAD refs/tags/t",
	} {
		out, err := testenv.GitTry(mnt, attack)
		if err == nil {
			t.Errorf("%s: not refused:\n%s", attack, out)
		}
		if h := head(); h != base {
			t.Fatalf("%s: HEAD moved to %s", attack, h)
		}
		testenv.GitAs(t, mnt, "git reset -q") // what a refused checkout left in the index
		if out, _ := testenv.GitTry(src, "git for-each-ref --format='%(refname) %(objectname)' refs/heads; git show-ref -s side"); strings.Contains(out, crafted) {
			t.Fatalf("%s: a branch names the crafted commit:\n%s", attack, out)
		}
	}

	// An ordinary commit in scope passes, and is recorded.
	if out, err := testenv.GitTry(mnt, "git status --porcelain -uno"); err != nil || out != "" {
		t.Fatalf("the attacks left changes behind: %v\n%s", err, out)
	}
	testenv.GitAs(t, mnt, "printf 'package api\\n\\nfunc Get() {}\\n' > src/api.go && git add src/api.go && git commit -qm 'the api'")
	ok := head()
	r := e.WaitRecord("commit record", func(r *ledger.Record) bool { return r.Gov().Event == ledger.EventCommit && r.Gov().Commit == ok })
	if g := r.Gov(); len(g.Records) != 1 || ledger.Str(g.IntentID) != "INT-001" || g.Process == nil || g.Process.Comm != "git" {
		t.Fatalf("commit record: intent %q, process %+v, links %v; want INT-001, git and the write of src/api.go", ledger.Str(g.IntentID), g.Process, g.Records)
	}
	// A commit made in an agent session names the session's intent and
	// the session, as its writes do. (A session refuses a source whose
	// parent directory the agent could swap.)
	if err := os.Chown(filepath.Dir(src), 0, 0); err != nil {
		t.Fatal(err)
	}
	out, code := e.RunSession("--intent", "INT-002", "--name", "committer", "--", "env", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@example.com", "GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@example.com",
		"sh", "-c", "cd "+mnt+" && mkdir -p docs && echo guide > docs/guide.md && git add docs/guide.md && git commit -qm guide")
	if code != 0 {
		t.Fatalf("a commit in a session failed (%d):\n%s", code, out)
	}
	inSession := head()
	r = e.WaitRecord("the session's commit record", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventCommit && r.Gov().Commit == inSession
	})
	if g := r.Gov(); ledger.Str(g.IntentID) != "INT-002" || g.Session == nil || g.Session.Name != "committer" {
		t.Fatalf("the session's commit record: intent %q, session %+v; want INT-002 and the session committer", ledger.Str(g.IntentID), g.Session)
	}
	if lg := c.Must("log", "--source", src, "--event", "commit"); !testenv.LineWith(lg, "INT-002", "git[", "@"+r.Gov().Session.ID) {
		t.Fatalf("intentfs log does not name the committing session:\n%s", lg)
	}
	out = c.Must("check", "--source", src, base+"..HEAD")
	t.Logf("intentfs check %s..HEAD:\n%s", base[:12], out)
	if !strings.HasPrefix(out, "OK") {
		t.Fatalf("check of the ordinary commit:\n%s", out)
	}
	// Packed branches can be deleted: git rewrites packed-refs through
	// packed-refs.new, and the gate judges the rename.
	// (The packed-refs attack above left its packed-refs.new behind.)
	testenv.GitAs(t, mnt, "rm -f .git/packed-refs.new && git branch gone && git pack-refs --all && git branch -q -D gone")
	if out, _ := testenv.GitTry(src, "git show-ref --verify refs/heads/gone"); !strings.Contains(out, "not a valid ref") {
		t.Fatalf("git branch -D of a packed branch left it: %s", out)
	}
	// git stash builds a temporary index (.git/index.stash.<pid>).
	testenv.GitAs(t, mnt, "echo '// wip' >> src/api.go && git stash -q && git diff --quiet && git stash pop -q && grep -q wip src/api.go")
	testenv.GitAs(t, mnt, "git checkout -q -- src/api.go")
	// Notes are attached in the background; amend keeps them.
	for _, id := range []string{ok, inSession} {
		testenv.WaitFor(t, func() bool { _, err := testenv.GitTry(src, "git notes --ref=intentfs show "+id); return err == nil }, "the note of "+id)
	}
	testenv.GitAs(t, mnt, "git commit -q --amend -m 'the guide, amended'")
	amended := head()
	if note, err := testenv.GitTry(src, "git notes --ref=intentfs show "+amended); err != nil || !strings.Contains(note, "docs/guide.md") {
		t.Fatalf("the amended commit has no note: %v\n%s", err, note)
	}
}

// TestGitRestoresAreNotAuthorship: switching to another branch and back,
// and merging upstream work, is not refused and not blamed on the agent.
func TestGitRestoresAreNotAuthorship(t *testing.T) {
	testenv.Parallel(t)
	c, e, origin, _ := testenv.GateRepo(t)
	src, mnt := e.Src, e.Mnt
	testenv.GitAs(t, mnt, "printf 'package api\\n\\nfunc Get() {}\\n' > src/api.go && git add src/api.go && git commit -qm 'the api'")
	testenv.GitAs(t, mnt, "git checkout -q other && git checkout -q main")
	for _, r := range e.Records() {
		if r.Path() == "src/util.go" && r.Gov().PostHash != nil && r.Gov().RestoredFrom == "" {
			b, _ := json.Marshal(r)
			t.Fatalf("git's checkout of util.go is not recorded as a restore: %s by %+v: %s", r.Gov().Event, r.Gov().Process, b)
		}
	}
	blame := c.Must("blame", "--source", src, "src/util.go")
	t.Logf("intentfs blame src/util.go after git checkout other && git checkout main:\n%s", blame)
	if strings.Contains(blame, "INT-001") {
		t.Fatalf("the checkout is credited to the agent:\n%s", blame)
	}
	blame = c.Must("blame", "--source", src, "src/api.go")
	if !testenv.LineWith(blame, "INT-001", "func Get") {
		t.Fatalf("the agent's own line lost its record:\n%s", blame)
	}
	// Upstream work (a human's change to util.go) merged in the mount.
	up := filepath.Join(filepath.Dir(src), "up")
	testenv.GitAs(t, filepath.Dir(src), "git clone -q "+origin+" up")
	testenv.GitAs(t, up, "printf 'package api\\n\\n// upstream\\nfunc util() {}\\n' > src/util.go && git commit -qam upstream && git push -q origin main")
	testenv.GitAs(t, mnt, "git fetch -q origin && git merge -q --no-edit origin/main")
	if out := testenv.GitAs(t, src, "git log -1 --format=%P"); len(strings.Fields(out)) != 2 {
		t.Fatalf("no merge commit: %s", out)
	}
	blame = c.Must("blame", "--source", src, "src/util.go")
	t.Logf("intentfs blame src/util.go after merging upstream:\n%s", blame)
	if strings.Contains(blame, "INT-001") {
		t.Fatalf("the merge of upstream work is credited to the agent:\n%s", blame)
	}
}
