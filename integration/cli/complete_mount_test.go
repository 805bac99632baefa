package cli

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"strings"
	"testing"
)

// TestCompleteTakesMount: intent complete names its workspace by
// --mount like every other command of a mount, from any directory; and
// its refusal to run the checks as root names intent complete.
func TestCompleteTakesMount(t *testing.T) {
	// Serial: intent complete runs its checks in an agent session, whose mount namespace copies every mount of the other tests (serving them past their unmount until the session ends).
	testenv.Serial(t)
	const pol = `active_intents:
  - id: INT-001
    name: "source work"
    status: IN_PROGRESS
    owned_scope: ["src/**"]
    acceptance_criteria:
      - text: "the workspace is there"
        check: "test -f .orchestration/active_intents.yaml"
`
	t.Setenv("SUDO_USER", "") // as root itself, not through sudo
	c, repo, ws := testenv.NewPolicyRepo(t, pol)
	c.MountCLI(repo, ws)
	// The source is root's and this is not sudo: the checks would run
	// as root, which is refused, naming the command that was run.
	out, code := c.Run("intent", "complete", "INT-001", "--mount", ws)
	if code != 1 || !strings.Contains(out, "intentfs intent complete was not started through sudo") || strings.Contains(out, "intentfs run was not") {
		t.Errorf("complete without --user: exit %d\n%s", code, out)
	}
	out, code = c.Run("intent", "complete", "INT-001", "--mount", ws, "--user", "1000")
	if code != 0 || !strings.Contains(out, "PASS  the workspace is there") || !strings.Contains(out, "INT-001 is now COMPLETE") {
		t.Errorf("complete --mount: exit %d\n%s", code, out)
	}
	if out, code := c.Run("intent", "complete", "INT-001", "--mount", ws, "--source", repo); code != 2 {
		t.Errorf("--mount with --source: exit %d\n%s", code, out)
	}
}
