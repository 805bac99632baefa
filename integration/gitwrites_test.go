package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// TestGitWritesOutsideTheScope: the agent (INT-001, src/**) runs git in
// the mount, and git changes files outside src/. Switching to a branch
// that differs there and back, merging upstream work, checking a file out
// of deeper history and resetting to it are let through, recorded as
// restores and not credited to the agent; everything git is made to write
// there that no trusted commit holds is refused or undone, and leaves the
// files as they were.
func TestGitWritesOutsideTheScope(t *testing.T) {
	c, e, origin, _ := gateRepo(t)
	src, mnt := e.src, e.mnt
	readme := func() string {
		b, err := os.ReadFile(filepath.Join(src, "README.md"))
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return string(b)
	}
	// While every ref has the same README.md, git removing it (toward a
	// tree no commit has) is refused outright.
	out, _ := gitTry(mnt, "git read-tree -m -u HEAD $(git ls-tree HEAD | grep -v README.md | git mktree)")
	t.Logf("git read-tree -m -u to a tree without README.md:\n%s", out)
	if readme() != "# project\n" {
		t.Fatalf("read-tree removed README.md, which every ref has (README.md %q):\n%s", readme(), out)
	}
	waitFor(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(mnt, ".intentfs", "denials"))
		return lineWith(string(b), "OUT_OF_SCOPE", "README.md", "removing it moves toward none of them")
	}, "the denial of the removal")
	gitAs(t, mnt, "git reset -q")

	// Upstream (a human, outside the mount): a docs branch that differs
	// outside src/ (README.md changed, docs/guide.md added).
	up := filepath.Join(filepath.Dir(src), "up")
	gitAs(t, filepath.Dir(src), "git clone -q "+origin+" up")
	gitAs(t, up, "git checkout -qb docs && printf '# project\\n\\nSee docs/guide.md.\\n' > README.md && mkdir docs && echo '# Guide' > docs/guide.md && git add -A && git commit -qm docs && git push -q origin docs && git checkout -q main")

	// A branch that differs outside the scope, and back.
	// (--no-track: the agent cannot write .git/config, where tracking goes.)
	gitAs(t, mnt, "git fetch -q origin && git branch -q --no-track docs origin/docs && git checkout -q docs")
	if got := readme(); !strings.Contains(got, "See docs/guide.md") {
		t.Fatalf("README.md after git checkout docs: %q", got)
	}
	if _, err := os.Stat(filepath.Join(src, "docs", "guide.md")); err != nil {
		t.Fatalf("docs/guide.md after git checkout docs: %v", err)
	}
	gitAs(t, mnt, "git checkout -q main")
	if got := readme(); got != "# project\n" {
		t.Fatalf("README.md after git checkout main: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(src, "docs")); !os.IsNotExist(err) {
		t.Fatalf("docs/ after git checkout main: %v", err)
	}
	outside := func(r *ledger.Record) bool {
		return r.Path() == "README.md" || strings.HasPrefix(r.Path(), "docs")
	}
	for _, r := range e.records() {
		g := r.Gov()
		if outside(r) && g.Event != ledger.EventDenied && g.RestoredFrom == "" {
			t.Fatalf("git's change outside the scope is not recorded as a restore: %s %s %+v", g.Event, r.Path(), g)
		}
	}
	blame := c.must("blame", "--source", src, "README.md")
	t.Logf("intentfs blame README.md after git checkout docs && git checkout main:\n%s", blame)
	if strings.Contains(blame, "INT-001") {
		t.Fatalf("the checkout is credited to the agent:\n%s", blame)
	}

	// Upstream work outside the scope merged in the mount, on top of the
	// agent's own commit: not refused, not the agent's.
	gitAs(t, mnt, "printf 'package api\\n\\nfunc Get() {}\\n' > src/api.go && git add src/api.go && git commit -qm 'the api'")
	gitAs(t, up, "printf '# project\\n\\nUpstream.\\n' > README.md && git commit -qam upstream && git push -q origin main")
	gitAs(t, mnt, "git fetch -q origin && git merge -q --no-edit origin/main")
	if got := readme(); !strings.Contains(got, "Upstream.") {
		t.Fatalf("README.md after the merge: %q", got)
	}
	if out := gitAs(t, src, "git log -1 --format=%P"); len(strings.Fields(out)) != 2 {
		t.Fatalf("no merge commit: %s", out)
	}
	blame = c.must("blame", "--source", src, "README.md")
	t.Logf("intentfs blame README.md after merging upstream:\n%s", blame)
	if strings.Contains(blame, "INT-001") {
		t.Fatalf("the merge of upstream work is credited to the agent:\n%s", blame)
	}

	// Deeper history: three more upstream versions, then a version that
	// no ref names (HEAD~3), and a reset back to one.
	gitAs(t, up, "for v in 3 4 5; do printf '# project\\n\\nv%s\\n' $v > README.md && git commit -qam v$v; done && git push -q origin main")
	gitAs(t, mnt, "git fetch -q origin && git reset -q --hard origin/main && git checkout -q HEAD~3 -- README.md")
	if got := readme(); !strings.Contains(got, "Upstream.") {
		t.Fatalf("README.md after git checkout HEAD~3 -- README.md: %q", got)
	}
	r := e.waitRecord("the record of git checkout HEAD~3 -- README.md", func(r *ledger.Record) bool {
		return r.Path() == "README.md" && r.Gov().Event == ledger.EventCreate && r.Gov().PostHash != nil && ledger.Str(r.Gov().PostHash) == shaOf([]byte("# project\n\nUpstream.\n"))
	})
	t.Logf("git checkout HEAD~3 -- README.md: restored_from %q", r.Gov().RestoredFrom)
	if !strings.HasPrefix(r.Gov().RestoredFrom, "commit ") {
		t.Fatalf("HEAD~3's README.md is not recorded as a restore: %+v", r.Gov())
	}
	gitAs(t, mnt, "git reset -q --hard HEAD~2")
	if got := readme(); !strings.Contains(got, "v3") {
		t.Fatalf("README.md after git reset --hard HEAD~2: %q", got)
	}
	gitAs(t, mnt, "git reset -q --hard origin/main")
	want := readme()

	// Attacks. Each must leave README.md and docs/ as they are.
	denials := func() string {
		b, _ := os.ReadFile(filepath.Join(mnt, ".intentfs", "denials"))
		return string(b)
	}
	crafted := gitAs(t, mnt, "printf '100644 blob %s\\tREADME.md\\n040000 tree %s\\tdocs\\n' $(echo pwned | git hash-object -w --stdin) $(printf '100644 blob %s\\tguide.md\\n' $(echo pwned | git hash-object -w --stdin) | git mktree) | git mktree | xargs git commit-tree -p HEAD -m crafted")
	evil := filepath.Join(filepath.Dir(src), "evil")
	gitAs(t, filepath.Dir(src), "git init -q -b main evil && cd evil && echo pwned > README.md && git add README.md && git commit -qm evil")
	agentGit := filepath.Join(filepath.Dir(src), "agentbin")
	gitAs(t, filepath.Dir(src), "mkdir agentbin && cp \"$(command -v git)\" agentbin/git")
	for _, a := range []struct{ name, script, code string }{
		{"git rm", "git rm -q README.md", "OUT_OF_SCOPE"},
		// docs has another README.md: the removal is let through, but
		// git does not write the file again, so it is put back.
		{"read-tree to a tree without README.md", "git read-tree -m -u HEAD $(git ls-tree HEAD | grep -v README.md | git mktree)", "GIT_RESTORE_UNVERIFIED"},
		{"checkout of a commit crafted in the mount", "git checkout " + crafted + " -- README.md", "GIT_RESTORE_UNVERIFIED"},
		{"checkout of a new file from a crafted commit", "git checkout " + crafted + " -- docs/guide.md", "GIT_RESTORE_UNVERIFIED"},
		{"hash-object, update-index, checkout-index", "blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,README.md && git checkout-index -f README.md", "GIT_RESTORE_UNVERIFIED"},
		{"a commit made outside the mount, fetched", "git fetch -q " + evil + " main && git checkout FETCH_HEAD -- README.md", "GIT_RESTORE_UNVERIFIED"},
		{"a process that is not git", "echo pwned > README.md", "OUT_OF_SCOPE"},
		{"a copy of git the agent owns", agentGit + "/git checkout origin/docs -- README.md", "OUT_OF_SCOPE"},
		// The commit gate accepts a merge that adds nothing of its own;
		// what it merged is still not trusted.
		{"a fetched commit merged with -s ours", "git fetch -q " + evil + " main && git merge -q -s ours --allow-unrelated-histories --no-edit FETCH_HEAD && git checkout FETCH_HEAD -- README.md", "GIT_RESTORE_UNVERIFIED"},
	} {
		before := strings.Count(denials(), a.code)
		out, err := gitTry(mnt, a.script)
		t.Logf("%s: err %v\n%s\nREADME.md now %q", a.name, err, out, readme())
		if _, err := os.Lstat(filepath.Join(src, "docs", "guide.md")); readme() != want || err == nil {
			for _, r := range e.records() {
				if outside(r) {
					t.Logf("%s %s %s restored_from=%q code=%s reason=%s", r.Gov().Event, r.Path(), ledger.Str(r.Gov().PostHash), r.Gov().RestoredFrom, r.Gov().Code, r.Gov().Reason)
				}
			}
		}
		// A removal git does not follow with the file is undone once
		// git has exited.
		waitFor(t, func() bool { return readme() == want }, a.name+": README.md as it was")
		if _, err := os.Lstat(filepath.Join(src, "docs", "guide.md")); !os.IsNotExist(err) {
			t.Fatalf("%s: docs/guide.md is there (%v)", a.name, err)
		}
		waitFor(t, func() bool { return strings.Count(denials(), a.code) > before }, a.name+": a denial "+a.code)
		gitAs(t, mnt, "git reset -q && rmdir docs 2>/dev/null; true")
	}
	den := denials()
	t.Logf(".intentfs/denials:\n%s", den)
	if !lineWith(den, "GIT_RESTORE_UNVERIFIED", "README.md", "put back") {
		t.Fatalf("no denial says the forged README.md was undone:\n%s", den)
	}
	if out, err := gitTry(mnt, "git status --porcelain -uno"); err != nil || out != "" {
		t.Fatalf("the attacks left changes behind: %v\n%s", err, out)
	}
	// No forged version was ever recorded as allowed.
	for _, r := range e.records() {
		if g := r.Gov(); outside(r) && g.Event != ledger.EventDenied && g.PostHash != nil && ledger.Str(g.PostHash) == shaOf([]byte("pwned\n")) && g.Event != ledger.EventRevert {
			t.Fatalf("forged content recorded as allowed: %+v", g)
		}
	}
}
