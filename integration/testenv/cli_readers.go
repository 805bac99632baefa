package testenv

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
)

// RunBounded runs the CLI and fails the test if it has not finished
// within limit: a reader that blocks or spins on agent-shaped input is
// the failure these tests look for.
func (c *CLI) RunBounded(limit time.Duration, args ...string) (string, int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+c.Runtime)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		c.t.Fatalf("intentfs %s did not finish within %v (it followed or blocked on agent-shaped input):\n%.2000s", strings.Join(args, " "), limit, out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("running intentfs %v: %v", args, err)
	}
	return string(out), code
}
