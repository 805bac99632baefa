package testenv

import (
	"os/exec"
	"strconv"
)

// RunAs runs script as uid:gid in dir, outside any mount.
func RunAs(dir string, uid, gid int, script string) (string, error) {
	cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(gid), "--clear-groups", "sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
