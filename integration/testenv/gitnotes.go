package testenv

import (
	"strings"
	"testing"
)

// NotesPolicy is the policy of the git notes tests.
const NotesPolicy = `active_intents:
  - id: INT-001
    name: the api
    status: IN_PROGRESS
    owned_scope: ["src/**"]
  - id: INT-002
    name: the guide
    status: IN_PROGRESS
    owned_scope: ["docs/**"]
`

// GitAs runs a shell script as the agent in dir, with git configured as a
// plain user's (no system or global config; an identity).
func GitAs(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := CommandIn(dir, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@example.com", "GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@example.com"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// LineWith reports whether a line of text holds every part.
func LineWith(text string, parts ...string) bool {
	for _, l := range strings.Split(text, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}
