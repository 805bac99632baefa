package testenv

import (
	"os"
	"testing"
)

// VerifyClean runs `intentfs verify` on the source, as a user would, and
// fails the test unless it passes.
func VerifyClean(t *testing.T, src string) {
	t.Helper()
	c := NewCLI(t)
	out, code := c.Run("verify", "--source", src)
	if code != 0 {
		t.Fatalf("intentfs verify --source %s exited %d:\n%s", src, code, out)
	}
}

// SystemPython is a python3 that uid 1000 can run (not a shim in root's
// home).
func SystemPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("no system python3")
	return ""
}
