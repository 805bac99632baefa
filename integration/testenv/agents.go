package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// AgentPolicy has the agent's intent (src/**) active and another one,
// INT-002, owning docs/**.
const AgentPolicy = `active_intents:
  - id: INT-001
    name: API work
    status: IN_PROGRESS
    owned_scope: ["src/**"]
  - id: INT-002
    name: Documentation
    status: IN_PROGRESS
    owned_scope: ["docs/**"]
`

// AgentBinary is the intentfs binary where an unprivileged agent can run
// it (the build directory is private to root).
func AgentBinary(t *testing.T) string {
	t.Helper()
	dir := AgentDir(t, false)
	p := filepath.Join(dir, "intentfs")
	// cp, not a write from this process: while this process holds a
	// descriptor open for writing, every child a parallel test forks
	// carries it until that child execs, and running p fails with
	// ETXTBSY as long as one does (golang.org/issue/22315).
	if out, err := exec.Command("cp", IntentfsBinary(t), p).CombinedOutput(); err != nil {
		t.Fatalf("copying intentfs to %s: %v\n%s", p, err, out)
	}
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// AgentDir is a directory uid 1000 can reach (t.TempDir's parent is
// private to root); owned by the agent if owned is set.
func AgentDir(t *testing.T, owned bool) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "intentfs-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if owned {
		if err := os.Chown(dir, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// CountEvents flushes e's ledger and counts its records of event ev.
func CountEvents(e *Env, ev ledger.Event) int {
	if err := e.D.FlushLedger(); err != nil {
		e.T.Fatal(err)
	}
	n := 0
	for _, r := range e.Records() {
		if r.Gov().Event == ev {
			n++
		}
	}
	return n
}
