package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os/exec"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

const gitPolicy = `active_intents:
  - id: INT-010
    name: new repository
    status: IN_PROGRESS
    owned_scope: ["**", ".git/config", ".git/hooks/**", ".git/info/**", ".git/branches/**"]
`

func TestGitInitAddCommitInTheMount(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, gitPolicy, "INT-010", nil)
	git := "git -c user.name=agent -c user.email=agent@example.com -c init.defaultBranch=main "
	e.MustSh(git + "init -q . && mkdir -p src && echo 'package main' > src/main.go && " + git + "add -A && " + git + "commit -qm first")
	// The ledger itself changes with every record; the work is committed.
	if out := e.MustSh("git status --porcelain -- . ':!.orchestration'"); out != "" {
		t.Fatalf("git status after commit: %q", out)
	}
	head := strings.TrimSpace(e.MustSh("git rev-parse HEAD"))
	// A change after the commit carries HEAD's revision.
	e.MustSh("echo '// v2' >> src/main.go")
	r := e.WaitRecord("write after commit", testenv.Event(ledger.EventWrite, "src/main.go"))
	if r.VCS == nil || r.VCS.Type != "git" || r.VCS.Revision != head {
		t.Fatalf("vcs = %+v, want git %s", r.VCS, head)
	}
	// .git internals are exempt and not traced; the explicitly granted
	// config is.
	sawConfig := false
	for _, r := range e.Records() {
		p := r.Path()
		if strings.HasPrefix(p, ".git/objects/") || p == ".git/index" {
			t.Errorf("exempt git internal traced: %s %s", r.Gov().Event, p)
		}
		sawConfig = sawConfig || strings.HasPrefix(p, ".git/config")
	}
	if !sawConfig {
		t.Error("no record for the granted .git/config")
	}
	out, err := exec.Command("git", "-C", e.Src, "log", "--oneline").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "first") {
		t.Fatalf("source repo log: %v %s", err, out)
	}
}

func TestGitCommitInExistingRepoNeedsNoGitScope(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-001", nil)
	if out, err := exec.Command("git", "init", "-q", e.Src).CombinedOutput(); err != nil {
		t.Fatalf("git init in source: %v %s", err, out)
	}
	git := "git -c user.name=agent -c user.email=agent@example.com "
	e.MustSh("mkdir -p src && echo x > src/a.go && " + git + "add src/a.go && " + git + "commit -qm add")
	e.MustDeny("echo 'rm -rf ~' > .git/hooks/pre-commit")
	e.MustDeny(git + "config core.fsmonitor evil")
}
