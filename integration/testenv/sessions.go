package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/intentfs/intentfs/internal/agent"
)

// SessionPolicy is the policy of the agent session tests.
const SessionPolicy = `active_intents:
  - id: INT-001
    name: source work
    status: IN_PROGRESS
    owned_scope: ["src/**"]
    acceptance_criteria:
      - text: checks run as the agent
        check: "id -u; test \"$(id -u)\" != 0"
  - id: INT-002
    name: docs work
    status: IN_PROGRESS
    owned_scope: ["docs/**"]
  - id: INT-003
    name: shared work
    status: IN_PROGRESS
    shared: true
    owned_scope: ["shared/**"]
  - id: INT-004
    name: notes that record stale writes
    status: IN_PROGRESS
    on_stale: record
    shared: true
    owned_scope: ["notes/**"]
  - id: INT-005
    name: everything
    status: IN_PROGRESS
    owned_scope: ["**"]
`

// MountForSessions mounts a workspace whose files belong to the agent's
// uid, as a checkout of the agent's user would.
func MountForSessions(t *testing.T, intent string) *Env {
	t.Helper()
	seed := map[string]string{"README.md": "human readme\n", "src/a.txt": "a\n", "docs/index.md": "docs\n",
		"shared/doc.txt": "v1\n", "notes/n.txt": "n1\n"}
	RequireFUSE(t)
	return MountAt(t, SourceOutsideTmp(t), SessionPolicy, intent, seed, func(src string) {
		if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", AgentUID, AgentGID), src).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v\n%s", err, out)
		}
	})
}

// SourceOutsideTmp makes a source directory outside /tmp: a session has a
// /tmp of its own, where a source under the host's /tmp simply is not, and
// the covers that hide the source would go untested.
func SourceOutsideTmp(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("/var/lib", "intentfs-test-")
	if err != nil {
		t.Fatalf("a source outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(base, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	return src
}

// Session returns `intentfs run` against e as the agent user, with args
// (flags, then -- and the command).
func (e *Env) Session(args ...string) *exec.Cmd {
	e.T.Helper()
	bin, err := testBinary.get()
	if err != nil {
		e.T.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"run", "--mount", e.Mnt, "--user", strconv.Itoa(AgentUID)}, args...)...)
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+e.Reg)
	cmd.Dir = "/"
	return cmd
}

// RunSession runs a session to its end and returns its output and exit
// status.
func (e *Env) RunSession(args ...string) (string, int) {
	e.T.Helper()
	out, err := e.Session(args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	e.T.Fatalf("intentfs run: %v\n%s", err, out)
	return "", -1
}

// CLI runs the intentfs command against e's registry.
func (e *Env) CLI(args ...string) (string, error) {
	e.T.Helper()
	bin, err := testBinary.get()
	if err != nil {
		e.T.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+e.Reg)
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// SessionNamed returns the session called name, as intentfs sessions
// lists it.
func (e *Env) SessionNamed(name string) (agent.Info, bool) {
	for _, s := range e.D.Sessions() {
		if s.Name == name {
			return s, true
		}
	}
	return agent.Info{}, false
}
