package fileperm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/creds"
)

func TestCheck(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the check runs as another uid")
	}
	sw, err := creds.New()
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	mk := func(rel string, dir bool, mode os.FileMode, uid int) {
		p := filepath.Join(src, rel)
		if dir {
			if err := os.Mkdir(p, mode); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte("x\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(p, uint32(mode)); err != nil { // os.Chmod would drop the sticky bit
			t.Fatal(err)
		}
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(src, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	mk("src", true, 0o755, 1000)
	mk("src/mine.go", false, 0o644, 1000)
	mk("src/root.go", false, 0o644, 0)
	mk("src/shared.go", false, 0o666, 0)
	mk("locked", true, 0o755, 0)
	mk("locked/a.go", false, 0o666, 0)
	mk("private", true, 0o700, 0)
	mk("private/b.go", false, 0o666, 0)
	mk("tmp", true, 0o1777, 0)
	mk("tmp/theirs", false, 0o666, 2000)
	if err := os.Symlink("locked", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	rootFd, err := unix.Open(src, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rootFd)

	agent := creds.Caller{Uid: 1000, Gid: 1000}
	cases := []struct {
		rel, op string
		caller  creds.Caller
		want    string // "" when allowed
	}{
		{"src/mine.go", "open_write", agent, ""},
		{"src/root.go", "open_write", agent, "src/root.go belongs to root:root 0644; uid 1000 may not write it"},
		{"src/root.go", "open_write", creds.Caller{Uid: 0}, ""},
		{"src/shared.go", "truncate", agent, ""},
		{"src/root.go", "unlink", agent, ""}, // the directory decides a removal
		{"src/new.go", "create", agent, ""},
		{"src/deep/new.go", "create", agent, ""},
		{"locked/a.go", "open_write", agent, ""},
		{"locked/new.go", "create", agent, "locked belongs to root:root 0755; uid 1000 may not create locked/new.go in it"},
		{"locked/x/y.go", "create", agent, "locked belongs to root:root 0755; uid 1000 may not create locked/x/y.go in it"},
		{"locked/a.go", "unlink", agent, "locked belongs to root:root 0755; uid 1000 may not remove locked/a.go from it"},
		{"locked/a.go", "chmod", agent, "locked/a.go belongs to root:root 0666; uid 1000 may not change its mode (only its owner may)"},
		{"locked/a.go", "utimes", agent, ""}, // writable: times may be set to now
		{"src/root.go", "utimes", agent, "src/root.go belongs to root:root 0644; uid 1000 may not set its times (only its owner may)"},
		{"src/mine.go", "chmod", agent, ""},
		{"private/b.go", "open_write", agent, "private belongs to root:root 0700; uid 1000 may not enter it (search permission), so nothing below it can be changed"},
		{"tmp/theirs", "unlink", agent, "tmp/theirs belongs to 2000:2000 0666; uid 1000 may not remove it: tmp is sticky (mode 1777), so only the file's or the directory's owner may"},
		{"new.go", "create", agent, ""},
		{"new.go", "create", creds.Caller{Uid: 2000, Gid: 2000}, "the workspace root belongs to"},
		// A symbolic link on the way is never followed: no verdict.
		{"link/new.go", "create", agent, ""},
	}
	for _, c := range cases {
		r, err := Check(rootFd, c.rel, c.op, c.caller, func(fn func() error) error { return sw.Run(c.caller, fn) })
		if err != nil {
			t.Errorf("%s %s: %v", c.op, c.rel, err)
			continue
		}
		got := ""
		if r != nil {
			got = r.Reason
		}
		if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s as uid %d:\n got %q\nwant %q", c.op, c.rel, c.caller.Uid, got, c.want)
		}
	}
}
