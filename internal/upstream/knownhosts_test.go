package upstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckKnownHosts: only a file the agent cannot change is accepted.
func TestCheckKnownHosts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give files to another uid")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := func(name string, mode os.FileMode, uid int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("host ssh-ed25519 AAAA\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good", 0o644, 0)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	agentDir := filepath.Join(dir, "agent")
	if err := os.Mkdir(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(agentDir, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	inAgentDir := filepath.Join(agentDir, "known_hosts")
	if err := os.WriteFile(inAgentDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, want string
	}{
		{good, ""},
		{file("agents", 0o644, 1000), "belongs to uid 1000"},
		{file("groupw", 0o664, 0), "writable by group or others"},
		{file("private", 0o600, 0), "not readable by others"},
		{link, "not a regular file"},
		{inAgentDir, "belongs to uid 1000"},
		{"relative", "absolute"},
		{filepath.Join(dir, "absent"), "no such file"},
	} {
		err := CheckKnownHosts(c.path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.path, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.path, err, c.want)
		}
	}
}
