package runner

import (
	"os"
	"strings"
	"testing"
)

// TestResolveUserRefusalNamesTheCommand: the refusal of a root agent
// names the command the user ran, not always intentfs run.
func TestResolveUserRefusalNamesTheCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs a root-owned source")
	}
	t.Setenv("SUDO_USER", "")
	src := t.TempDir()
	for _, c := range []struct{ what, command string }{
		{"the agent", "intentfs run"},
		{"the acceptance checks", "intentfs intent complete"},
	} {
		_, err := ResolveUser("", src, c.what, c.command)
		if err == nil {
			t.Fatalf("%s: a root-owned source resolved to a user", c.command)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, c.what+" would run as root") || !strings.Contains(msg, c.command+" was not started through sudo") ||
			!strings.Contains(msg, c.command+" --user agent") || !strings.Contains(msg, src) {
			t.Errorf("%s: %s", c.command, msg)
		}
		if c.command != "intentfs run" && strings.Contains(msg, "intentfs run ") {
			t.Errorf("%s's refusal names intentfs run: %s", c.command, msg)
		}
	}
	if u, err := ResolveUser("root", src, "the agent", "intentfs run"); err != nil || u.Uid != 0 {
		t.Errorf("--user root: %+v %v", u, err)
	}
}
