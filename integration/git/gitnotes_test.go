package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/policy"
)

// mountSource mounts an existing source (a clone) with intent selected,
// unmounting in t.Cleanup.
func mountSource(t *testing.T, src, intent string) string {
	t.Helper()
	return testenv.StartDaemon(t, src, t.TempDir(), intent).Mountpoint()
}

// TestCheckAndNotesAcrossThreeClones is a team's day with real mounts and
// the real binary: agent A (INT-001, src/) commits through its
// mount and then sneaks a README change into history with git's plumbing;
// check names it. Agent B (INT-002, docs/) works in a second clone and
// rebases on A's work. Both push their notes; a third, fresh clone with no
// ledger of its own shows both histories in log and blame, checks clean
// and verifies both origins' chains.
func TestCheckAndNotesAcrossThreeClones(t *testing.T) {
	testenv.Parallel(t)
	testenv.RequireFUSE(t)
	c := testenv.NewCLI(t)
	root := t.TempDir()
	// The agent must reach the test's directories.
	os.Chmod(filepath.Dir(root), 0o755)
	os.Chmod(root, 0o755)
	origin := filepath.Join(root, "origin.git")
	seed := filepath.Join(root, "seed")
	for _, d := range []string{origin, seed} {
		os.Mkdir(d, 0o755)
	}
	testenv.ChownTree(t, root)
	testenv.GitAs(t, origin, "git init -q --bare -b main .")
	testenv.GitAs(t, seed, "git init -q -b main . && mkdir -p .orchestration")
	testenv.WriteFile(t, filepath.Join(seed, policy.IntentsFile), testenv.NotesPolicy)
	testenv.WriteFile(t, filepath.Join(seed, "README.md"), "# project\n")
	scratch := t.TempDir()
	c.Must("init", scratch) // intentfs init writes .orchestration/.gitignore
	gi, err := os.ReadFile(filepath.Join(scratch, ".orchestration", ".gitignore"))
	if err != nil || !strings.Contains(string(gi), "/agent_trace.jsonl") || !strings.Contains(string(gi), "/objects/") {
		t.Fatalf("init's .gitignore: %v\n%s", err, gi)
	}
	testenv.WriteFile(t, filepath.Join(seed, ".orchestration", ".gitignore"), string(gi))
	testenv.ChownTree(t, seed)
	testenv.GitAs(t, seed, "git add -A && git commit -qm base && git push -q "+origin+" main")
	base := testenv.GitAs(t, seed, "git rev-parse HEAD")

	// Agent A works through its mount, as uid 1000.
	a := filepath.Join(root, "a")
	testenv.GitAs(t, root, "git clone -q "+origin+" a")
	mntA := mountSource(t, a, "INT-001")
	testenv.GitAs(t, mntA, "mkdir -p src && printf 'package api\\n\\nfunc Get() {}\\n' > src/api.go && git add src/api.go && git commit -qm 'the api'")
	// The ledger is not committed: .orchestration/.gitignore keeps it out.
	if out := testenv.GitAs(t, mntA, "git status --porcelain --ignored .orchestration"); !strings.Contains(out, "!! .orchestration/agent_trace.jsonl") {
		t.Fatalf("the ledger is not ignored by git:\n%s", out)
	}
	out := c.Must("notes", "sync", "--source", a)
	if !strings.Contains(out, "attached") {
		t.Fatalf("notes sync: %s", out)
	}
	// An ordinary in-scope commit checks clean.
	out = c.Must("check", "--source", a, base+"..HEAD")
	t.Logf("intentfs check (ordinary commit):\n%s", out)
	if !strings.HasPrefix(out, "OK") {
		t.Fatalf("check of an ordinary commit:\n%s", out)
	}
	// The plumbing attack: content into history without the work tree.
	// Made outside the mount (in the mount the commit is refused: see
	// TestCommitGate), it is check that names it.
	testenv.GitAs(t, a, "blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,README.md && git commit -qm 'tidy'")
	sneaky := testenv.GitAs(t, a, "git rev-parse HEAD")
	out, code := c.Run("check", "--source", a, base+"..HEAD")
	t.Logf("intentfs check (after the plumbing attack), exit %d:\n%s", code, out)
	if code != 1 || !testenv.LineWith(out, sneaky[:12], "README.md", "never written through the mount") || strings.Count(out, "never written") != 1 {
		t.Fatalf("check did not flag the plumbing commit (exit %d):\n%s", code, out)
	}
	out, code = c.Run("check", "--source", a, "--json", base+"..HEAD")
	var rep struct {
		Problems []struct{ Commit, Path, Kind string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || len(rep.Problems) != 1 ||
		rep.Problems[0].Commit != sneaky || rep.Problems[0].Path != "README.md" || rep.Problems[0].Kind != "untraced" {
		t.Fatalf("check --json (exit %d): %v\n%s", code, err, out)
	}
	if out, code := c.Run("check", "--source", a, "--output=/tmp/x"); code != 2 {
		t.Fatalf("an option as a range: exit %d\n%s", code, out)
	}
	if out, code := c.Run("check", "--source", a, "--", "--output=/tmp/x"); code != 2 || !strings.Contains(out, "cannot start with") {
		t.Fatalf("a flag-like range: exit %d\n%s", code, out)
	}
	// Take the sneaky commit back (index and ref only).
	testenv.GitAs(t, a, "git reset -q --soft HEAD~1 && git reset -q HEAD -- README.md")
	// The first push: the remote has no notes yet, which is no error.
	if out := c.Must("notes", "push", "--source", a); !strings.Contains(out, "the remote has no notes yet") || strings.Contains(out, "fatal") {
		t.Fatalf("the first notes push:\n%s", out)
	}
	testenv.GitAs(t, a, "git push -q origin main")
	if out := c.Must("verify", "--notes", "--source", a); !strings.HasPrefix(lastLine(out), "OK") {
		t.Fatalf("verify --notes on clone a:\n%s", out)
	}

	// Agent B works in a second clone on the guide.
	b := filepath.Join(root, "b")
	testenv.GitAs(t, root, "git clone -q "+origin+" b")
	// Written before A pushed? No: B's clone has A's commit; give B its
	// own base by resetting to the seed, so the two diverge.
	testenv.GitAs(t, b, "git reset -q --hard "+base)
	mntB := mountSource(t, b, "INT-002")
	testenv.GitAs(t, mntB, "mkdir -p docs && printf '# Guide\\n\\nUse Get.\\n' > docs/guide.md && git add docs && git commit -qm 'the guide'")
	c.Must("notes", "sync", "--source", b)
	// B rebases on A's work outside its mount (git's checkout of A's
	// files is not B's authorship); notes.rewriteRef carries B's note.
	testenv.GitAs(t, b, "git pull -q --rebase origin main")
	c.Must("notes", "push", "--source", b)
	testenv.GitAs(t, b, "git push -q origin main")

	// A fresh clone, no ledger of its own.
	fresh := filepath.Join(root, "c")
	testenv.GitAs(t, root, "git clone -q "+origin+" c")
	if _, err := os.Stat(filepath.Join(fresh, ".orchestration", "agent_trace.jsonl")); err == nil {
		t.Fatal("the ledger was committed")
	}
	t.Logf("intentfs notes fetch:\n%s", c.Must("notes", "fetch", "--source", fresh))
	out = c.Must("log", "--source", fresh, "--limit", "0")
	t.Logf("intentfs log on the fresh clone:\n%s", out)
	for _, want := range []string{"src/api.go", "docs/guide.md", "INT-001", "INT-002"} {
		if !strings.Contains(out, want) {
			t.Errorf("log on the fresh clone lacks %s", want)
		}
	}
	out = c.Must("blame", "--source", fresh, "src/api.go")
	t.Logf("intentfs blame src/api.go on the fresh clone:\n%s", out)
	if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != 3 || strings.Count(out, "INT-001") != 3 {
		t.Errorf("blame on the fresh clone does not credit INT-001:\n%s", out)
	}
	out = c.Must("check", "--source", fresh, base+"..HEAD")
	t.Logf("intentfs check on the fresh clone:\n%s", out)
	if !strings.HasPrefix(out, "OK") || !strings.Contains(out, "2 commit(s)") {
		t.Errorf("check on the fresh clone:\n%s", out)
	}
	out = c.Must("verify", "--source", fresh)
	t.Logf("intentfs verify on the fresh clone:\n%s", out)
	if !strings.HasPrefix(lastLine(out), "OK") || strings.Count(out, "origin ") != 2 {
		t.Errorf("verify on the fresh clone:\n%s", out)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestNotesOfCommitsMadeInTheMount: a commit made in the mount gets its
// note, with its own commit record, without a notes sync; rebasing it on
// upstream work in the mount keeps the note on the rebased commit, gives
// that commit its own commit record, and blames none of the upstream work
// on the agent.
func TestNotesOfCommitsMadeInTheMount(t *testing.T) {
	testenv.Parallel(t)
	c, e, origin, _ := testenv.GateRepo(t)
	src, mnt := e.Src, e.Mnt
	noteOf := func(commit string) string {
		out, err := testenv.GitTry(src, "git notes --ref=intentfs show "+commit)
		if err != nil {
			return ""
		}
		return out
	}
	hasCommitRecord := func(commit string) bool {
		return strings.Contains(noteOf(commit), `"commit":"`+commit+`"`)
	}
	testenv.GitAs(t, mnt, "printf 'package api\\n\\nfunc A() {}\\n' > src/a.go && git add src/a.go && git commit -qm 'the a'")
	first := testenv.GitAs(t, src, "git rev-parse HEAD")
	testenv.WaitFor(t, func() bool { return hasCommitRecord(first) }, "the note of the commit, with its commit record")
	if !strings.Contains(noteOf(first), `"path":"src/a.go"`) {
		t.Fatalf("the note lacks the write:\n%s", noteOf(first))
	}

	// A human pushes upstream work; the agent rebases on it in the mount.
	up := filepath.Join(filepath.Dir(src), "up")
	testenv.GitAs(t, filepath.Dir(src), "git clone -q "+origin+" up")
	testenv.GitAs(t, up, "printf 'package api\\n\\n// upstream\\nfunc util() {}\\n' > src/util.go && git commit -qam upstream && git push -q origin main")
	out := testenv.GitAs(t, mnt, "git pull -q --rebase origin main && git log --format='%h %s' -3")
	t.Logf("git pull --rebase in the mount:\n%s", out)
	rebased := testenv.GitAs(t, src, "git rev-parse HEAD")
	upstream := testenv.GitAs(t, src, "git rev-parse origin/main")
	if rebased == first || testenv.GitAs(t, src, "git rev-parse HEAD~1") != upstream {
		t.Fatalf("not rebased: HEAD %s, HEAD~1 is not %s", rebased, upstream)
	}
	if !strings.Contains(noteOf(rebased), `"path":"src/a.go"`) {
		t.Fatalf("the rebased commit lost the note:\n%s", noteOf(rebased))
	}
	testenv.WaitFor(t, func() bool { return hasCommitRecord(rebased) }, "the rebased commit's own commit record in its note")
	out = c.Must("check", "--source", src, "origin/main..HEAD")
	t.Logf("intentfs check after the rebase:\n%s", out)
	if !strings.HasPrefix(out, "OK") || !strings.Contains(out, "1 commit(s)") {
		t.Fatalf("check after the rebase:\n%s", out)
	}
	blame := c.Must("blame", "--source", src, "src/util.go")
	if strings.Contains(blame, "INT-001") {
		t.Fatalf("the rebase's checkout of upstream work is credited to the agent:\n%s", blame)
	}
	if out := c.Must("verify", "--notes", "--source", src); !strings.HasPrefix(lastLine(out), "OK") {
		t.Fatalf("verify --notes:\n%s", out)
	}
}
