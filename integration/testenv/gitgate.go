package testenv

import (
	"strings"
)

// GitTry is gitAs that returns git's failure instead of failing the test.
func GitTry(dir, script string) (string, error) {
	cmd := CommandIn(dir, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@example.com", "GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@example.com"}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
