package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"path/filepath"
	"testing"
)

// TestBlameKeepsAuthorshipThroughGitRestores: git deletes and recreates
// a file on a branch switch, rebase, cherry-pick, stash pop and amend; the
// restored version keeps the owners its lines had, so the human's lines
// stay the human's and the agent's line the agent's.
func TestBlameKeepsAuthorshipThroughGitRestores(t *testing.T) {
	testenv.Parallel(t)
	c, e, origin, _ := testenv.GateRepo(t)
	src, mnt := e.Src, e.Mnt
	agent := []string{"package api:-", ":-", "func util() {}:-", "// agent:INT-001"}
	testenv.GitAs(t, mnt, "git checkout -qb feat && echo '// agent' >> src/util.go && git commit -qam agent")
	wantBlame(t, c, src, "src/util.go", "the agent's append", agent...)

	testenv.GitAs(t, mnt, "git checkout -q main && git checkout -q feat")
	wantBlame(t, c, src, "src/util.go", "git checkout main; git checkout feat", agent...)

	// A human's change to util.go pushed upstream, and feat rebased on
	// it: the rebase writes a version nobody wrote before, whose lines
	// are the human's and the agent's.
	up := filepath.Join(filepath.Dir(src), "up")
	testenv.GitAs(t, filepath.Dir(src), "git clone -q "+origin+" up")
	testenv.GitAs(t, up, "printf 'package api\\n// human\\n\\nfunc util() {}\\n' > src/util.go && git commit -qam human && git push -q origin main")
	testenv.GitAs(t, mnt, "git fetch -q origin && git rebase -q origin/main")
	rebased := []string{"package api:-", "// human:-", ":-", "func util() {}:-", "// agent:INT-001"}
	wantBlame(t, c, src, "src/util.go", "git rebase origin/main", rebased...)
	out := c.Must("blame", "--source", src, "src/util.go")
	t.Logf("intentfs blame src/util.go after git rebase origin/main:\n%s", out)
	// The agent's line is still its own append's, not git's.
	if !testenv.LineWith(out, "INT-001", "sh[", "// agent") {
		t.Errorf("the rebased line is not credited to the agent's append:\n%s", out)
	}

	// The agent's commit cherry-picked onto main.
	testenv.GitAs(t, mnt, "git checkout -q main && git merge -q --ff-only origin/main && git cherry-pick feat >/dev/null")
	wantBlame(t, c, src, "src/util.go", "git cherry-pick", rebased...)
	agent = rebased

	// Stashed work taken back.
	testenv.GitAs(t, mnt, "echo '// wip' >> src/util.go && git stash -q && git stash pop -q")
	wantBlame(t, c, src, "src/util.go", "git stash pop", append(agent, "// wip:INT-001")...)

	// The work committed, then the commit amended.
	testenv.GitAs(t, mnt, "git commit -qam wip && echo '// amend' >> src/util.go && git commit -q --amend -am wip2")
	wantBlame(t, c, src, "src/util.go", "git commit --amend", append(agent, "// wip:INT-001", "// amend:INT-001")...)

	// Back to feat and main again: each version has the owners it had.
	testenv.GitAs(t, mnt, "git checkout -q feat")
	wantBlame(t, c, src, "src/util.go", "git checkout feat", agent...)
	testenv.GitAs(t, mnt, "git checkout -q main")
	wantBlame(t, c, src, "src/util.go", "git checkout main", append(agent, "// wip:INT-001", "// amend:INT-001")...)
}
