package testenv

import (
	"os"
	"os/exec"
)

// RunEnv is run with extra environment variables (the OTEL_* ones).
func (c *CLI) RunEnv(env []string, args ...string) (string, int) {
	c.t.Helper()
	cmd := exec.Command(c.Bin, args...)
	cmd.Dir = c.Dir
	cmd.Env = append(append(os.Environ(), "INTENTFS_RUNTIME_DIR="+c.Runtime), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("running intentfs %v: %v", args, err)
	}
	return string(out), code
}
