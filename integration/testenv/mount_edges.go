package testenv

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/mounts"
)

// RunAs runs the binary as uid (no supplementary groups) in c.dir with
// the given runtime directory.
func (c *CLI) RunAs(uid int, runtime string, args ...string) (string, int) {
	c.t.Helper()
	// The binary's directory is root's alone by default.
	if err := os.Chmod(filepath.Dir(c.Bin), 0o755); err != nil {
		c.t.Fatal(err)
	}
	argv := append([]string{"--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(uid), "--clear-groups", "env", "INTENTFS_RUNTIME_DIR=" + runtime, c.Bin}, args...)
	cmd := exec.Command("setpriv", argv...)
	cmd.Dir = c.Dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("running intentfs %v as uid %d: %v", args, uid, err)
	}
	return string(out), code
}

// MountCLI mounts repo at ws with the binary and unmounts in t.Cleanup
// (forcibly, if the test left it to the kernel).
func (c *CLI) MountCLI(repo, ws string, args ...string) string {
	c.t.Helper()
	out := c.Must(append([]string{"mount", repo, ws}, args...)...)
	dir := c.Dir // a test may move c.dir to a directory removed before this runs
	c.t.Cleanup(func() {
		if _, ok := mounts.IntentfsMountAt(ws); ok {
			c.Dir = dir
			c.Run("unmount", ws)
			syscall.Unmount(ws, syscall.MNT_DETACH)
		}
	})
	return out
}

// Status is `intentfs status --json` of the mount at ws.
func (c *CLI) Status(ws string) control.Status {
	c.t.Helper()
	var st control.Status
	if err := json.Unmarshal([]byte(c.Must("status", "--mount", ws, "--json")), &st); err != nil {
		c.t.Fatal(err)
	}
	return st
}
