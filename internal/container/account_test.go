package container

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func writeEtc(t *testing.T, passwd, group string) string {
	t.Helper()
	etc := t.TempDir()
	for name, body := range map[string]string{"passwd": passwd, "group": group} {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return etc
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const basePasswd = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
const baseGroup = "root:x:0:\nusers:x:100:\nnogroup:x:65534:\n"

// TestEnsureAccountAddsAgent: a uid the container has no account for
// gets the account "agent" with that uid, a group for the gid if none
// has it, and a home it owns; the other entries are kept.
func TestEnsureAccountAddsAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chowns the home directory: needs root")
	}
	etc, home := writeEtc(t, basePasswd, baseGroup), t.TempDir()
	u, err := ensureAccount(etc, home, 1234, 1235)
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != AgentName || u.Uid != 1234 || u.Gid != 1235 || u.Home != filepath.Join(home, "agent") {
		t.Fatalf("user = %+v", u)
	}
	passwd, group := read(t, filepath.Join(etc, "passwd")), read(t, filepath.Join(etc, "group"))
	if !strings.HasPrefix(passwd, basePasswd) || !strings.Contains(passwd, "\nagent:x:1234:1235:") {
		t.Errorf("passwd:\n%s", passwd)
	}
	if !strings.HasPrefix(group, baseGroup) || !strings.Contains(group, "\nagent:x:1235:\n") {
		t.Errorf("group:\n%s", group)
	}
	st, err := os.Stat(u.Home)
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid := ownerOf(st); uid != 1234 || gid != 1235 {
		t.Errorf("home owned by %d:%d", uid, gid)
	}

	// A second start with other ids (another host user) replaces the
	// entry instead of adding one; a gid that has a group adds none.
	if _, err := ensureAccount(etc, home, 2000, 100); err != nil {
		t.Fatal(err)
	}
	passwd, group = read(t, filepath.Join(etc, "passwd")), read(t, filepath.Join(etc, "group"))
	if strings.Count("\n"+passwd, "\nagent:") != 1 || !strings.Contains(passwd, "agent:x:2000:100:") {
		t.Errorf("passwd after the second start:\n%s", passwd)
	}
	if strings.Contains(group, "agent:x:100:") {
		t.Errorf("a group was added for gid 100, which users has:\n%s", group)
	}
}

// TestEnsureAccountKeepsAnExistingAccount: an account of the image that
// has the uid (a devcontainer's vscode) is used as it is.
func TestEnsureAccountKeepsAnExistingAccount(t *testing.T) {
	etc := writeEtc(t, basePasswd+"vscode:x:1000:1000::/home/vscode:/bin/bash\n", baseGroup+"vscode:x:1000:\n")
	before := read(t, filepath.Join(etc, "passwd"))
	u, err := ensureAccount(etc, t.TempDir(), 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "vscode" || u.Home != "/home/vscode" || u.Uid != 1000 || u.Gid != 1000 {
		t.Fatalf("user = %+v", u)
	}
	if read(t, filepath.Join(etc, "passwd")) != before {
		t.Error("passwd changed")
	}
}

// TestResolveIdentity: the source's owner by default, the environment
// over it, --user over both; root refused in every form.
func TestResolveIdentity(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chowns the source: needs root")
	}
	src := t.TempDir()
	if err := os.Chown(src, 1000, 1001); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		id       Identity
		uid, gid uint32
		err      string
	}{
		{Identity{}, 1000, 1001, ""},
		{Identity{EnvUID: "1500"}, 1500, 1001, ""},
		{Identity{EnvUID: "1500", EnvGID: "1600"}, 1500, 1600, ""},
		{Identity{User: "1700:1800", EnvUID: "1500"}, 1700, 1800, ""},
		{Identity{User: "1700"}, 1700, 1001, ""},
		{Identity{EnvUID: "0"}, 0, 0, "root"},
		{Identity{User: "0:0"}, 0, 0, "root"},
		{Identity{User: "root"}, 0, 0, "root"},
		{Identity{EnvGID: "0"}, 0, 0, "group root"},
		{Identity{EnvUID: "abc"}, 0, 0, "not a numeric id"},
	}
	for _, c := range cases {
		uid, gid, err := resolveIdentity(c.id, src)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%+v: err = %v, want one saying %q", c.id, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%+v: %v", c.id, err)
		case c.err == "" && (uid != c.uid || gid != c.gid):
			t.Errorf("%+v: %d:%d, want %d:%d", c.id, uid, gid, c.uid, c.gid)
		}
	}
	// A root-owned source, with nothing said, is refused with what to do.
	if err := os.Chown(src, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := resolveIdentity(Identity{}, src); err == nil || !strings.Contains(err.Error(), "INTENTFS_UID=$(id -u)") {
		t.Errorf("root-owned source: err = %v", err)
	}
}

func ownerOf(st os.FileInfo) (uint32, uint32) {
	s := st.Sys().(*syscall.Stat_t)
	return s.Uid, s.Gid
}
