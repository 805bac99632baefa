package upstream

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// upstreamRepo is gateRepo with the policy declaring origin's main as the
// upstream, and docs the agent (INT-001, src/**) does not own: a guide,
// a page upstream will delete, and a human's clone (up) to change them.
func upstreamRepo(t *testing.T) (c *testenv.CLI, e *testenv.Env, up string) {
	return upstreamFixture(t, testenv.NotesPolicy, map[string]string{"docs/old.md": "# Old\n"}, nil)
}

// upstreamFixture makes, in a new directory (prepare, if set, may mount
// a filesystem on it first), an origin whose policy is intents with
// origin's main declared as the upstream, with a README, src/util.go,
// docs/guide.md and files; a clone of it mounted with INT-001; and a
// human's clone, up.
func upstreamFixture(t *testing.T, intents string, files map[string]string, prepare func(root string)) (c *testenv.CLI, e *testenv.Env, up string) {
	t.Helper()
	testenv.RequireFUSE(t)
	c = testenv.NewCLI(t)
	root := t.TempDir()
	if prepare != nil {
		prepare(root)
	}
	os.Chmod(filepath.Dir(root), 0o755)
	os.Chmod(root, 0o755)
	origin, seed := filepath.Join(root, "origin.git"), filepath.Join(root, "seed")
	for _, d := range []string{origin, seed} {
		os.Mkdir(d, 0o755)
	}
	testenv.WriteFile(t, filepath.Join(seed, policy.IntentsFile), intents+"upstream:\n  url: "+origin+"\n  ref: main\n")
	scratch := t.TempDir()
	c.Must("init", scratch)
	gi, err := os.ReadFile(filepath.Join(scratch, ".orchestration", ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(seed, ".orchestration", ".gitignore"), string(gi))
	testenv.WriteFile(t, filepath.Join(seed, "README.md"), "# project\n")
	testenv.WriteFile(t, filepath.Join(seed, "src", "util.go"), "package api\n\nfunc util() {}\n")
	testenv.WriteFile(t, filepath.Join(seed, "docs", "guide.md"), "# Guide\n\nv1\n")
	for rel, content := range files {
		testenv.WriteFile(t, filepath.Join(seed, rel), content)
	}
	testenv.ChownTree(t, root)
	testenv.GitAs(t, origin, "git init -q --bare -b main .")
	testenv.GitAs(t, seed, "git init -q -b main . && git add -A && git commit -qm base && git push -q "+origin+" main")
	testenv.GitAs(t, root, "git clone -q "+origin+" clone && git clone -q "+origin+" up")
	d := testenv.StartDaemon(t, filepath.Join(root, "clone"), t.TempDir(), "INT-001")
	return c, &testenv.Env{T: t, Src: d.Source(), Mnt: d.Mountpoint(), D: d}, filepath.Join(root, "up")
}

// TestPullOfUpstreamOutsideTheScope: a human changes files outside the
// agent's scope upstream (a changed guide, a deleted page, a new
// directory, a new executable); the agent's `git pull` in the mount is
// neither refused nor credited to the agent, and every other way of
// making git write there is refused or undone, leaving the files as the
// upstream has them.
func TestPullOfUpstreamOutsideTheScope(t *testing.T) {
	testenv.Parallel(t)
	c, e, up := upstreamRepo(t)
	src, mnt := e.Src, e.Mnt
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return string(b)
	}
	denials := func() string {
		b, _ := os.ReadFile(filepath.Join(mnt, ".intentfs", "denials"))
		return string(b)
	}

	testenv.GitAs(t, mnt, "printf 'package api\\n\\nfunc Get() {}\\n' > src/api.go && git add src/api.go && git commit -qm 'the api'")
	// Pushed at once, in the mount, the notes carry the commit just made
	// (the mount attaches them a second after it).
	head := testenv.GitAs(t, mnt, "git rev-parse HEAD")
	c.Must("notes", "push", "--source", mnt, "origin")
	if out, err := testenv.CommandIn(filepath.Join(filepath.Dir(src), "origin.git"), "git", "-c", "safe.directory=*", "notes", "--ref=intentfs", "list", head).CombinedOutput(); err != nil {
		t.Fatalf("the commit just made has no note on the remote after notes push: %v\n%s", err, out)
	}
	testenv.GitAs(t, up, "printf '# Guide\\n\\nv2\\n' > docs/guide.md && git rm -q docs/old.md && mkdir -p docs/new && echo '# New' > docs/new/page.md && "+
		"printf '#!/bin/sh\\necho run\\n' > run.sh && chmod +x run.sh && git add -A && git commit -qm 'docs v2' && git push -q origin main")
	out := testenv.GitAs(t, mnt, "git pull -q --no-rebase --no-edit origin main 2>&1; echo status $?")
	t.Logf("git pull --no-rebase origin main in the mount:\n%s", out)
	if !strings.HasSuffix(out, "status 0") {
		t.Fatalf("the pull failed:\n%s\ndenials:\n%s", out, denials())
	}
	for rel, want := range map[string]string{"docs/guide.md": "# Guide\n\nv2\n", "docs/new/page.md": "# New\n", "run.sh": "#!/bin/sh\necho run\n", "src/api.go": "package api\n\nfunc Get() {}\n"} {
		if got := read(rel); got != want {
			t.Fatalf("%s after the pull: %q, want %q", rel, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(src, "docs", "old.md")); !os.IsNotExist(err) {
		t.Fatalf("docs/old.md after the pull: %v", err)
	}
	if st, err := os.Stat(filepath.Join(src, "run.sh")); err != nil || st.Mode()&0o100 == 0 {
		t.Fatalf("run.sh is not executable after the pull: %v %v", st, err)
	}
	if parents := testenv.GitAs(t, src, "git log -1 --format=%P"); len(strings.Fields(parents)) != 2 {
		t.Fatalf("no merge commit: %s", parents)
	}
	if st := testenv.GitAs(t, mnt, "git status --porcelain -uno"); st != "" {
		t.Fatalf("git status after the pull:\n%s", st)
	}
	tip := testenv.GitAs(t, up, "git rev-parse HEAD")
	if den := denials(); strings.Contains(den, " rmdir ") || strings.Contains(den, " create ") || strings.Contains(den, " unlink ") {
		t.Fatalf("the pull left denials:\n%s", den)
	}
	status := c.Must("status", "--mount", mnt)
	t.Logf("intentfs status:\n%s", status)
	if !strings.Contains(status, "upstream:   "+filepath.Join(filepath.Dir(src), "origin.git")+" refs/heads/main at "+tip[:12]) {
		t.Fatalf("status does not show the upstream at %s:\n%s", tip, status)
	}
	outside := func(r *ledger.Record) bool {
		return strings.HasPrefix(r.Path(), "docs") || r.Path() == "run.sh"
	}
	e.WaitRecord("the record of docs/new/page.md", func(r *ledger.Record) bool {
		return r.Path() == "docs/new/page.md" && r.Gov().Event == ledger.EventCreate
	})
	for _, r := range e.Records() {
		g := r.Gov()
		if outside(r) && g.Event != ledger.EventDenied && g.RestoredFrom != "commit "+tip {
			t.Fatalf("git's change outside the scope is not recorded as the upstream's: %s %s %+v", g.Event, r.Path(), g)
		}
	}
	blame := c.Must("blame", "--source", src, "docs/guide.md")
	t.Logf("intentfs blame docs/guide.md after the pull:\n%s", blame)
	if strings.Contains(blame, "INT-001") {
		t.Fatalf("the pull is credited to the agent:\n%s", blame)
	}
	// The agent's uid cannot read the object store (root's): verify says
	// so, instead of calling every kept version missing.
	rt := t.TempDir()
	os.Chmod(rt, 0o777)
	if out, code := c.RunAs(1000, rt, "verify", "--source", src); code != 0 || !strings.Contains(out, "is not readable by you") || strings.Contains(out, "not in the object store") {
		t.Fatalf("verify as the agent's uid (exit %d):\n%s", code, out)
	}
	check, code := c.Run("check", "--source", src, "origin/main..HEAD")
	t.Logf("intentfs check origin/main..HEAD (exit %d):\n%s", code, check)
	if code != 0 {
		t.Fatalf("check fails after the pull (exit %d):\n%s", code, check)
	}

	// The default range in the mounted clone (it has a ledger): the base
	// comes from the daemon's mirror of the declared upstream, which the
	// agent cannot write, not from refs/remotes/origin/main, which it can.
	check, code = c.Run("check", "--source", src)
	t.Logf("intentfs check (default range, exit %d):\n%s", code, check)
	if code != 0 || !strings.Contains(check, "from the daemon's mirror of the declared upstream") || !strings.Contains(check, "..HEAD: 2 commit(s), 1 changed path(s)") {
		t.Fatalf("the default range in the mounted clone does not start at the mirror's tip (exit %d):\n%s", code, check)
	}

	// A reviewer's clone of the agent's repository: its own upstream is
	// the agent's branch, so the default range holds nothing, and check
	// says so; with a remote at the declared upstream's URL, the default
	// range starts there.
	testenv.GitAs(t, filepath.Dir(src), "git clone -q "+src+" review")
	review := filepath.Join(filepath.Dir(src), "review")
	if out, _ := c.Run("check", "--source", review); !strings.Contains(out, "note: the default range") {
		t.Fatalf("check in a clone whose upstream is HEAD does not say it checked nothing:\n%s", out)
	}
	testenv.GitAs(t, review, "git remote add up "+filepath.Join(filepath.Dir(src), "origin.git")+" && git fetch -q up")
	// The range holds the agent's commit and its merge of upstream, which
	// holds nothing of its own (its content comes from a parent).
	// Without the notes, the agent's commit cannot be accounted for, and
	// check says where its records would be.
	if out, code := c.Run("check", "--source", review); code != 1 || !strings.Contains(out, "..HEAD: 2 commit(s), 1 changed path(s)") || !strings.Contains(out, "has no intentfs note in this clone") {
		t.Fatalf("check in a clone with the declared upstream as a remote, without notes (exit %d):\n%s", code, out)
	}
	c.Must("notes", "fetch", "--source", review)
	if out, code := c.Run("check", "--source", review); code != 0 || !strings.Contains(out, "..HEAD: 2 commit(s), 1 changed path(s)") {
		t.Fatalf("check in a clone with the declared upstream and the notes (exit %d):\n%s", code, out)
	}

	// A clone of root's, whose origin (the agent's repository) belongs to
	// uid 1000: git refuses to read it as root, and notes fetch says what
	// to do, once.
	rootCfg := filepath.Join(t.TempDir(), "gitconfig")
	testenv.WriteFile(t, rootCfg, "[safe]\n\tdirectory = *\n")
	clone := testenv.CommandIn(filepath.Dir(src), "git", "clone", "-q", src, "rootclone")
	clone.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+rootCfg)
	if out, err := clone.CombinedOutput(); err != nil {
		t.Fatalf("git clone as root: %v\n%s", err, out)
	}
	out, code = c.Run("notes", "fetch", "--source", filepath.Join(filepath.Dir(src), "rootclone"))
	t.Logf("intentfs notes fetch in root's clone of uid 1000's repository (exit %d):\n%s", code, out)
	if code == 0 || !strings.Contains(out, "git refuses to read") || !strings.Contains(out, "git notes --ref=intentfs merge") || strings.Count(out, "dubious") > 0 {
		t.Fatalf("notes fetch from a remote of another owner (exit %d):\n%s", code, out)
	}

	// Attacks: each must leave docs/ as the upstream has it.
	want := read("docs/guide.md")
	crafted := testenv.GitAs(t, mnt, "git commit-tree -p HEAD -m crafted $(printf '040000 tree %s\\tdocs\\n' $(printf '100644 blob %s\\tguide.md\\n100644 blob %s\\tevil.md\\n' $(echo pwned | git hash-object -w --stdin) $(echo pwned | git hash-object -w --stdin) | git mktree) | git mktree)")
	evil := filepath.Join(filepath.Dir(src), "evil")
	testenv.GitAs(t, filepath.Dir(src), "git clone -q "+filepath.Join(filepath.Dir(src), "origin.git")+" evil && cd evil && echo pwned > docs/guide.md && git commit -qam evil && git push -q origin HEAD:agent")
	for _, a := range []struct{ name, script, code string }{
		{"a process that is not git", "echo pwned > docs/guide.md", "OUT_OF_SCOPE"},
		{"checkout-index of a planted blob", "blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,docs/guide.md && git checkout-index -f docs/guide.md", "OUT_OF_SCOPE"},
		{"a new file from a crafted commit", "git checkout " + crafted + " -- docs/evil.md", "OUT_OF_SCOPE"},
		{"a rollback to the upstream's older version", "git checkout HEAD~1 -- docs/guide.md", "OUT_OF_SCOPE"},
		{"a branch the agent pushed to the upstream's repository", "git fetch -q origin agent && git checkout FETCH_HEAD -- docs/guide.md", "OUT_OF_SCOPE"},
		// Two fetches: the daemon's second fetch of the upstream waits
		// out the first's debounce, and git's writes wait for it. With
		// --progress, git signals itself (SIGALRM) every second while it
		// writes files, which interrupts that wait; the refusal must
		// still be the upstream's answer.
		{"a commit from elsewhere", "git fetch -q origin && git fetch -q " + evil + " HEAD && git merge --progress --no-edit FETCH_HEAD", "OUT_OF_SCOPE"},
	} {
		before := strings.Count(denials(), a.code)
		out, err := testenv.GitTry(mnt, a.script)
		t.Logf("%s: err %v\n%s", a.name, err, out)
		if err == nil {
			t.Errorf("%s: git did not fail", a.name)
		}
		testenv.WaitFor(t, func() bool { return read("docs/guide.md") == want }, a.name+": docs/guide.md as the upstream has it")
		if _, err := os.Lstat(filepath.Join(src, "docs", "evil.md")); !os.IsNotExist(err) {
			t.Fatalf("%s: docs/evil.md is there (%v)", a.name, err)
		}
		testenv.WaitFor(t, func() bool { return strings.Count(denials(), a.code) > before }, a.name+": a denial "+a.code)
		testenv.GitAs(t, mnt, "git merge --abort 2>/dev/null; git reset -q; true")
	}

	// The upstream moves on (v3), and the pull works by a rebase of the
	// agent's own commit.
	testenv.GitAs(t, up, "printf '# Guide\\n\\nv3\\n' > docs/guide.md && chmod -x run.sh && git commit -qam v3 && git push -q origin main")
	testenv.GitAs(t, mnt, "printf 'package api\\n\\nfunc Get() {}\\nfunc Put() {}\\n' > src/api.go && git commit -qam put")
	out = testenv.GitAs(t, mnt, "git pull -q --rebase origin main 2>&1; echo status $?")
	if !strings.HasSuffix(out, "status 0") || read("docs/guide.md") != "# Guide\n\nv3\n" {
		t.Fatalf("the pull of v3 failed (guide %q):\n%s\ndenials:\n%s", read("docs/guide.md"), out, denials())
	}
	if st, err := os.Stat(filepath.Join(src, "run.sh")); err != nil || st.Mode()&0o111 != 0 || read("run.sh") != "#!/bin/sh\necho run\n" {
		t.Fatalf("run.sh after the upstream took its executable bit: %v %v %q", st.Mode(), err, read("run.sh"))
	}
	if got := testenv.GitAs(t, src, "git merge-base --is-ancestor origin/main HEAD && git log --format=%s -1"); got != "put" {
		t.Fatalf("the agent's commit was not rebased onto v3: %s", got)
	}
	// The rebase's restores of the agent's own file say where from.
	if lg := c.Must("log", "--source", src, "--path", "src/api.go"); !strings.Contains(lg, "restored from ") {
		t.Fatalf("intentfs log shows no restore of src/api.go after the rebase:\n%s", lg)
	}

	// The upstream moves on (v4). Git made to remove the guide, toward
	// it, and then to write other bytes there: the forged bytes never
	// appear, and what git removed is put back. A path put back is not
	// removed toward the upstream again for a while.
	want = read("docs/guide.md")
	testenv.GitAs(t, up, "printf '# Guide\\n\\nv4\\n' > docs/guide.md && echo '# project v4' > README.md && git commit -qam v4 && git push -q origin main")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	for _, a := range []struct{ name, script, path, want string }{
		{"a removal git does not follow with the file", "git rm -q docs/guide.md", "docs/guide.md", want},
		{"forged bytes after a removal toward the upstream", "blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,README.md && git checkout-index -f README.md",
			"README.md", "# project\n"},
	} {
		before := strings.Count(denials(), "UPSTREAM_UNVERIFIED")
		out, err := testenv.GitTry(mnt, a.script)
		t.Logf("%s: err %v\n%s", a.name, err, out)
		testenv.WaitFor(t, func() bool { return read(a.path) == a.want }, a.name+": "+a.path+" put back")
		testenv.WaitFor(t, func() bool { return strings.Count(denials(), "UPSTREAM_UNVERIFIED") > before }, a.name+": a denial UPSTREAM_UNVERIFIED")
		testenv.GitAs(t, mnt, "git reset -q; true")
	}
	// Put back, the guide is not removed toward the upstream again for a
	// while, by any git.
	if out, err := testenv.GitTry(mnt, "git checkout origin/main -- docs/guide.md"); err == nil || read("docs/guide.md") != want {
		t.Fatalf("the guide was removed again right after it was put back (err %v, guide %q):\n%s", err, read("docs/guide.md"), out)
	}
	testenv.WaitFor(t, func() bool {
		return testenv.LineWith(denials(), "docs/guide.md", "removed it recently without writing it again")
	}, "the denial of a removal during the cooldown")
	den := denials()
	t.Logf(".intentfs/denials:\n%s", den)
	if strings.Contains(den, "context canceled") || strings.Contains(den, "deadline exceeded") {
		t.Fatalf("a refusal says the upstream could not be consulted:\n%s", den)
	}
	if !testenv.LineWith(den, "UPSTREAM_UNVERIFIED", "docs/guide.md", "put it back") || !testenv.LineWith(den, "UPSTREAM_UNVERIFIED", "README.md", "put it back") {
		t.Fatalf("no denial says the removal was put back:\n%s", den)
	}
	for _, r := range e.Records() {
		if g := r.Gov(); outside(r) && g.Event != ledger.EventDenied && g.PostHash != nil && ledger.Str(g.PostHash) == testenv.ShaOf([]byte("pwned\n")) {
			t.Fatalf("forged content recorded as allowed: %+v", g)
		}
	}

}
