package testenv

// RunAs runs script as uid:gid in dir, outside any mount.
func RunAs(dir string, uid, gid int, script string) (string, error) {
	cmd := ExecCommand("setpriv", "--reuid="+Itoa(uid), "--regid="+Itoa(gid), "--clear-groups", "sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
