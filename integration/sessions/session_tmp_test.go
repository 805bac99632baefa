package sessions

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionTmp: a session's /tmp is private and empty by default;
// --keep-tmp shows the host's (intentfs's own directories stay hidden);
// --bind-tmp DIR makes DIR the session's /tmp, kept after it ends; and a
// DIR that would show the source is refused.
func TestSessionTmp(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "")
	host := testenv.AgentDir(t, true)
	testenv.WriteFile(t, filepath.Join(host, "host.txt"), "from the host\n")
	if err := os.Chown(filepath.Join(host, "host.txt"), testenv.AgentUID, testenv.AgentGID); err != nil {
		t.Fatal(err)
	}
	out, code := e.RunSession("--intent", "INT-001", "--", "sh", "-c", "test -e "+host+"/host.txt && echo visible || echo private")
	if code != 0 || !strings.Contains(out, "private") {
		t.Errorf("default /tmp: exit %d\n%s", code, out)
	}
	out, code = e.RunSession("--intent", "INT-001", "--keep-tmp", "--", "sh", "-c", "cat "+host+"/host.txt; ls "+e.Reg+" >/dev/null 2>&1 && echo REGISTRY-VISIBLE; true")
	if code != 0 || !strings.Contains(out, "from the host") || strings.Contains(out, "REGISTRY-VISIBLE") {
		t.Errorf("--keep-tmp: exit %d\n%s", code, out)
	}
	bind := testenv.AgentDir(t, true)
	out, code = e.RunSession("--intent", "INT-001", "--bind-tmp", bind, "--", "sh", "-c", "echo cached > /tmp/npm-cache.txt && test ! -e "+host+"/host.txt && echo ok")
	if code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("--bind-tmp: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(bind, "npm-cache.txt")); err != nil || string(b) != "cached\n" {
		t.Errorf("what the session left in its bound /tmp: %v %q", err, b)
	}
	for _, dir := range []string{e.Src, filepath.Dir(e.Src)} {
		if out, code := e.RunSession("--intent", "INT-001", "--bind-tmp", dir, "--", "true"); code != 2 || !strings.Contains(out, "source") {
			t.Errorf("--bind-tmp %s: exit %d\n%s", dir, code, out)
		}
	}
	if out, code := e.RunSession("--intent", "INT-001", "--keep-tmp", "--bind-tmp", bind, "--", "true"); code != 2 {
		t.Errorf("--keep-tmp with --bind-tmp: exit %d\n%s", code, out)
	}
	if out, _ := e.CLI("run", "--help"); !strings.Contains(out, "The session's /tmp is PRIVATE") || !strings.Contains(out, "--keep-tmp") {
		t.Errorf("run --help:\n%s", out)
	}
}
