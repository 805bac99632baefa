package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const everythingPolicy = `active_intents:
  - id: INT-001
    name: everything
    status: IN_PROGRESS
    owned_scope: ["**"]
`

// TestFenceCallerCredentialsACL: the kernel's default_permissions check
// sees mode bits only, so a file whose ACL denies uid 1000 (u:1000:---)
// would be readable and writable through the mount unless the daemon
// opens it as the caller. Through the mount a caller must get exactly
// what it gets on the source.
func TestFenceCallerCredentialsACL(t *testing.T) {
	testenv.Parallel(t)
	src := ext4Source(t)
	e := testenv.MountAt(t, src, everythingPolicy, "INT-001", map[string]string{"acl.txt": "guarded\n", "open.txt": "open\n"}, func(src string) {
		for _, f := range []string{"acl.txt", "open.txt"} {
			if err := os.Chmod(filepath.Join(src, f), 0o666); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command("setfacl", "-m", "u:1000:---", filepath.Join(src, "acl.txt")).CombinedOutput(); err != nil {
			t.Fatalf("setfacl: %v\n%s", err, out)
		}
	})
	const uid, gid = 1000, 1000
	for _, script := range []string{"cat acl.txt", "echo pwned >> acl.txt"} {
		direct, derr := testenv.RunAs(e.Src, uid, gid, script)
		through, terr := e.ShAs(uid, gid, script)
		if derr == nil {
			t.Fatalf("%s works on the source itself: the ACL is not in force (%s)", script, direct)
		}
		if terr == nil || !strings.Contains(through, "Permission denied") {
			t.Errorf("%s through the mount: want Permission denied as on the source, got err=%v\n%s", script, terr, through)
		}
	}
	if c, _ := e.SrcContent("acl.txt"); c != "guarded\n" {
		t.Errorf("acl.txt in the source = %q", c)
	}
	// What the ACL does not forbid still works.
	if out, err := e.ShAs(uid, gid, "echo more >> open.txt && cat open.txt"); err != nil || out != "open\nmore\n" {
		t.Errorf("open.txt: %v\n%s", err, out)
	}
	// ACLs are visible and settable through the mount, by their owner.
	if out, err := e.Sh("getfacl -n -p acl.txt"); err != nil || !strings.Contains(out, "user:1000:---") {
		t.Errorf("getfacl through the mount: %v\n%s", err, out)
	}
}

// TestFenceCallerCredentialsRenameRace is the caller's credentials under
// a race: uid 1000 swaps its own file with a root-only one (renameat2
// RENAME_EXCHANGE) while opening its file for reading and appending. The
// kernel checks the inode it resolved; a daemon that reopened by name, as
// root, would reach the root-only file. No open may ever reach it.
func TestFenceCallerCredentialsRenameRace(t *testing.T) {
	testenv.Parallel(t)
	src := ext4Source(t)
	e := testenv.MountAt(t, src, everythingPolicy, "INT-001", map[string]string{"shared/mine": "mine\n", "shared/secret": "TOPSECRET\n"}, func(src string) {
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.Chmod(filepath.Join(src, "shared"), 0o777))
		must(os.Chown(filepath.Join(src, "shared/mine"), 1000, 1000))
		must(os.Chmod(filepath.Join(src, "shared/secret"), 0o600))
	})
	const attack = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(sys.argv[2])
end = time.time() + float(sys.argv[1])
pid = os.fork()
if pid == 0:
    while time.time() < end:
        libc.renameat2(-100, b"mine", -100, b"secret", 2)
    os._exit(0)
leaks = 0
while time.time() < end:
    try:
        with open("mine", "rb") as f:
            if b"TOPSECRET" in f.read():
                leaks += 1
    except OSError:
        pass
    try:
        fd = os.open("mine", os.O_WRONLY | os.O_APPEND)
        os.write(fd, b"pwned\n")
        os.close(fd)
    except OSError:
        pass
os.waitpid(pid, 0)
print("leaks", leaks)
`
	script := testenv.WorldReadable(t, "race.py", attack)
	out, err := e.ShAs(1000, 1000, "/usr/bin/python3 "+script+" 3 shared")
	if err != nil {
		t.Fatalf("attack: %v\n%s", err, out)
	}
	if !strings.Contains(out, "leaks 0") {
		t.Errorf("uid 1000 read the root-only file through the mount: %s", out)
	}
	// Whatever name it has now, root's file holds exactly what it held.
	for _, name := range []string{"mine", "secret"} {
		var st syscall.Stat_t
		p := filepath.Join(e.Src, "shared", name)
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid == 0 {
			if b, _ := os.ReadFile(p); string(b) != "TOPSECRET\n" {
				t.Errorf("root's file (now %s) holds %d bytes, %d lines of uid 1000's: uid 1000 wrote to it", name, len(b), strings.Count(string(b), "pwned"))
			}
		}
	}
}
