package fsnode_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestHeldHandlesAnswerNoCallerTheSourceRefuses: the daemon keeps a
// handle of each directory the kernel knows. After an ancestor is made
// 0700 in the source (and before the kernel learns it), requests that
// reach the daemon below it are refused to a caller the source refuses,
// as a path walk on the source would, however the daemon holds the
// directory; the owner still gets every answer.
func TestHeldHandlesAnswerNoCallerTheSourceRefuses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("taking on another user's credentials needs root")
	}
	k := newKernel(t, map[string]string{"src/a/b/c.txt": "c\n", "src/a/b/d.txt": "d\n"})
	for _, d := range []string{"", "src", "src/a", "src/a/b"} {
		if err := os.Chmod(filepath.Join(k.src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("c.txt", filepath.Join(k.src, "src/a/b/link")); err != nil {
		t.Fatal(err)
	}
	agent := fuse.Caller{Owner: fuse.Owner{Uid: 1000, Gid: 1000}, Pid: uint32(os.Getpid())}
	owner := k.caller

	// Each request the kernel sends for a name it already knows, as
	// `ls -l src/a/b`, `stat`, `readlink` and `getfattr` do.
	buf := make([]byte, 4096)
	requests := []struct {
		name string
		do   func() fuse.Status
	}{
		{"lookup in the held directory", func() fuse.Status {
			var out fuse.EntryOut
			h := k.header(k.mustNode("src/a/b"))
			return k.raw.Lookup(nil, &h, "d.txt", &out)
		}},
		{"getattr of a file in it", func() fuse.Status {
			var out fuse.AttrOut
			return k.raw.GetAttr(nil, &fuse.GetAttrIn{InHeader: k.header(k.mustNode("src/a/b/c.txt"))}, &out)
		}},
		{"getattr of the directory", func() fuse.Status {
			var out fuse.AttrOut
			return k.raw.GetAttr(nil, &fuse.GetAttrIn{InHeader: k.header(k.mustNode("src/a/b"))}, &out)
		}},
		{"readlink", func() fuse.Status {
			h := k.header(k.mustNode("src/a/b/link"))
			_, st := k.raw.Readlink(nil, &h)
			return st
		}},
		{"listxattr", func() fuse.Status {
			h := k.header(k.mustNode("src/a/b/c.txt"))
			_, st := k.raw.ListXAttr(nil, &h, buf)
			return st
		}},
		{"listing", func() fuse.Status {
			_, st := k.list("src/a/b")
			return st
		}},
	}
	run := func(who fuse.Caller, want fuse.Status, when string) {
		t.Helper()
		k.caller = who
		for _, r := range requests {
			if st := r.do(); st != want {
				t.Errorf("%s, uid %d: %s: %v, want %v", when, who.Uid, r.name, st, want)
			}
		}
	}
	// Changes through the held handle of src/a/b, which lets the agent
	// write (only its ancestor will refuse).
	for _, f := range []string{"mine.txt", "victim", "victim2"} {
		if err := os.WriteFile(filepath.Join(k.src, "src/a/b", f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(k.src, "src/a/b", f), 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(k.src, "src/a/b"), 0o777); err != nil {
		t.Fatal(err)
	}
	changes := func(suffix string) []struct {
		name string
		do   func() fuse.Status
	} {
		return []struct {
			name string
			do   func() fuse.Status
		}{
			{"create", func() fuse.Status { return k.create("src/a/b/new"+suffix, "n\n") }},
			{"mkdir", func() fuse.Status { return k.mkdir("src/a/b/dir" + suffix) }},
			{"symlink", func() fuse.Status { return k.symlink("c.txt", "src/a/b/sym"+suffix) }},
			{"link", func() fuse.Status { return k.link("src/a/b/mine.txt", "src/a/b/ln"+suffix) }},
			{"chmod", func() fuse.Status { return k.chmod("src/a/b/mine.txt", 0o600) }},
			{"unlink", func() fuse.Status { return k.unlink("src/a/b/victim") }},
			{"rename", func() fuse.Status { return k.rename("src/a/b/victim2", "src/a/b/moved"+suffix, 0) }},
		}
	}
	// The agent meets every name first: the nodes, and their handles,
	// are held.
	run(agent, fuse.OK, "before the chmod")
	for _, n := range []string{"src/a/b/mine.txt", "src/a/b/victim", "src/a/b/victim2"} {
		k.mustNode(n)
	}

	if err := os.Chmod(filepath.Join(k.src, "src/a"), 0o700); err != nil {
		t.Fatal(err)
	}
	run(agent, fuse.EACCES, "below a root-owned 0700 directory")
	k.caller = agent
	for _, c := range changes("1") {
		if st := c.do(); st != fuse.EACCES {
			t.Errorf("below a root-owned 0700 directory, uid 1000: %s: %v, want %v", c.name, st, fuse.EACCES)
		}
	}
	for _, f := range []string{"new1", "dir1", "sym1", "ln1", "moved1"} {
		if _, err := os.Lstat(filepath.Join(k.src, "src/a/b", f)); err == nil {
			t.Errorf("src/a/b/%s was made in the source by a refused caller", f)
		}
	}
	for _, f := range []string{"victim", "victim2"} {
		if _, err := os.Lstat(filepath.Join(k.src, "src/a/b", f)); err != nil {
			t.Errorf("src/a/b/%s went from the source at a refused caller's request: %v", f, err)
		}
	}
	run(owner, fuse.OK, "below a root-owned 0700 directory")

	// Back to 0755: the agent is answered again.
	if err := os.Chmod(filepath.Join(k.src, "src/a"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(agent, fuse.OK, "after the chmod is undone")

	// A chown of the ancestor to another user, mode 0700, refuses too.
	if err := os.Chmod(filepath.Join(k.src, "src/a"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(k.src, "src/a"), 2000, 2000); err != nil {
		t.Fatal(err)
	}
	run(agent, fuse.EACCES, "below a 0700 directory of uid 2000")
	if err := os.Chown(filepath.Join(k.src, "src/a"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	run(agent, fuse.OK, "below a 0700 directory of the agent's own")
	// Where the source lets it, every change goes through (so the
	// refusals above are the ancestor's).
	k.caller = agent
	for _, c := range changes("2") {
		if st := c.do(); st != fuse.OK {
			t.Errorf("below a 0700 directory of the agent's own: %s: %v", c.name, st)
		}
	}

	// An ACL entry that denies the agent, on a directory whose mode
	// alone would let it search.
	if err := os.Chown(filepath.Join(k.src, "src/a"), 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(k.src, "src/a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("setfacl", "-m", "u:1000:---", filepath.Join(k.src, "src/a")).CombinedOutput(); err != nil {
		t.Skipf("setfacl: %v: %s", err, out)
	}
	run(agent, fuse.EACCES, "below a directory whose ACL denies uid 1000")
	run(owner, fuse.OK, "below a directory whose ACL denies uid 1000")
}
