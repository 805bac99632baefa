package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/policy"
)

// IntentfsBinary is the intentfs binary, built on first use (once per
// test run; Main removes it when the run ends).
func IntentfsBinary(t *testing.T) string {
	t.Helper()
	path, err := testBinary.get()
	if err != nil {
		t.Fatalf("building intentfs: %v", err)
	}
	return path
}

// CLI runs the intentfs binary with an isolated runtime directory.
type CLI struct {
	t       *testing.T
	Bin     string
	Runtime string
	Dir     string
}

// NewCLI runs the built binary with a runtime directory and a working
// directory of its own.
func NewCLI(t *testing.T) *CLI {
	return &CLI{t: t, Bin: IntentfsBinary(t), Runtime: t.TempDir(), Dir: t.TempDir()}
}

// NewPolicyRepo is a CLI, a source "repo" in its directory holding
// policyYAML, and an empty mountpoint.
func NewPolicyRepo(t *testing.T, policyYAML string) (c *CLI, repo, ws string) {
	t.Helper()
	RequireFUSE(t)
	c = NewCLI(t)
	repo, ws = filepath.Join(c.Dir, "repo"), t.TempDir()
	WriteFile(t, filepath.Join(repo, policy.IntentsFile), policyYAML)
	return c, repo, ws
}

// Run runs intentfs with args and returns its output and exit code.
func (c *CLI) Run(args ...string) (string, int) {
	c.t.Helper()
	cmd := exec.Command(c.Bin, args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+c.Runtime)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("running intentfs %v: %v", args, err)
	}
	return string(out), code
}

// Must runs intentfs with args and fails the test unless it exits 0.
func (c *CLI) Must(args ...string) string {
	c.t.Helper()
	out, code := c.Run(args...)
	if code != 0 {
		c.t.Fatalf("intentfs %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}
