package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// flagsProbe issues, as the agent, the system calls whose flags have side
// effects beyond their name, and prints one "name: outcome" line each.
const flagsProbe = `
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
def outcome(name, rc):
    e = ctypes.get_errno() if rc < 0 else 0
    print("%s: %s" % (name, "ok" if rc >= 0 else errno.errorcode.get(e, str(e))))

# renameat2(RENAME_WHITEOUT) leaves a 0,0 character device at the old name.
outcome("whiteout", libc.renameat2(AT_FDCWD, b"work/w.txt", AT_FDCWD, b"work/w2.txt", ctypes.c_uint(4)))

# O_TMPFILE: a file with no name, which linkat could later put in the tree.
O_TMPFILE = 0o20000000 | os.O_DIRECTORY
try:
    fd = os.open("work", O_TMPFILE | os.O_RDWR, 0o644)
    os.write(fd, b"EVIL\n")
    rc = libc.linkat(fd, b"", AT_FDCWD, b"work/from_tmpfile.txt", 0x1000)
    outcome("tmpfile", rc)
except OSError as ex:
    print("tmpfile: %s" % errno.errorcode.get(ex.errno, str(ex.errno)))

# copy_file_range with flags: the kernel defines none.
src = os.open("work/c.txt", os.O_RDONLY); dst = os.open("work/d.txt", os.O_WRONLY)
libc.copy_file_range.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
outcome("copy_file_range flags", libc.copy_file_range(src, None, dst, None, 4, 1))
os.close(src); os.close(dst)

# fallocate modes that change content: each must be a recorded write.
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
for name, mode in (("punch_hole", 0x01 | 0x02), ("zero_range", 0x10), ("collapse_range", 0x08), ("insert_range", 0x20)):
    fd = os.open("work/f_%s.txt" % name, os.O_RDWR)
    outcome("fallocate " + name, libc.fallocate(fd, mode, 0, 4096))
    os.close(fd)
`

// TestFlagsWithSideEffects: every flag the agent can pass either has its
// effect decided and recorded like the change it makes, or is refused.
// RENAME_WHITEOUT (a character device at the old name no record names)
// and flags copy_file_range does not define are refused; O_TMPFILE is
// refused, so no nameless file can be linked into the tree; fallocate's
// content-changing modes are writes, recorded with the content they
// leave. The source holds only what the ledger says.
func TestFlagsWithSideEffects(t *testing.T) {
	testenv.Serial(t)
	page := strings.Repeat("A", 4096) + strings.Repeat("B", 4096)
	seed := map[string]string{"work/w.txt": "whiteout me\n", "work/c.txt": "copy\n", "work/d.txt": "dest\n"}
	for _, m := range []string{"punch_hole", "zero_range", "collapse_range", "insert_range"} {
		seed["work/f_"+m+".txt"] = page
	}
	e := testenv.MountPrepared(t, testenv.ScopePolicy, "INT-002", seed, func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "/usr/bin/python3 "+testenv.WorldReadable(t, "flags.py", flagsProbe))
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	results := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		name, res, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("probe output %q", line)
		}
		results[name] = res
	}
	t.Logf("probe:\n%s", out)

	// RENAME_WHITEOUT: refused, nothing moved, no device left behind.
	if results["whiteout"] == "ok" {
		t.Errorf("renameat2(RENAME_WHITEOUT) through the mount succeeded")
	}
	if c, ok := e.SrcContent("work/w.txt"); !ok || c != "whiteout me\n" {
		t.Errorf("work/w.txt in the source: %q, %v", c, ok)
	}
	if _, err := os.Lstat(filepath.Join(e.Src, "work/w2.txt")); err == nil {
		t.Errorf("work/w2.txt exists after a refused whiteout rename")
	}
	e.WaitRecord("the refused whiteout rename, with its reason", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventDenied && r.Path() == "work/w.txt" && g.Code == "UNSUPPORTED_FLAG" && strings.Contains(g.Reason, "RENAME_WHITEOUT")
	})
	var st syscall.Stat_t
	if syscall.Lstat(filepath.Join(e.Src, "work/w.txt"), &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFCHR {
		t.Errorf("work/w.txt is a character device: a whiteout no record names")
	}

	// O_TMPFILE: refused, so nothing lands in the tree through linkat.
	if results["tmpfile"] == "ok" {
		t.Errorf("an O_TMPFILE file was linked into the tree")
	}
	if _, err := os.Lstat(filepath.Join(e.Src, "work/from_tmpfile.txt")); err == nil {
		t.Errorf("work/from_tmpfile.txt exists")
	}

	if results["copy_file_range flags"] == "ok" {
		t.Errorf("copy_file_range with undefined flags succeeded")
	}
	if c, _ := e.SrcContent("work/d.txt"); c != "dest\n" {
		t.Errorf("work/d.txt changed to %q by a refused copy", c)
	}

	// fallocate: each mode that ran changed the file, and that change is
	// a write record of exactly the content the source holds.
	for _, m := range []string{"punch_hole", "zero_range", "collapse_range", "insert_range"} {
		rel := "work/f_" + m + ".txt"
		c, _ := e.SrcContent(rel)
		if results["fallocate "+m] != "ok" {
			if c != page {
				t.Errorf("%s: refused (%s) but the file changed", m, results["fallocate "+m])
			}
			continue
		}
		if c == page {
			t.Errorf("%s: succeeded and left the content as it was", m)
			continue
		}
		want := e.Sha(rel)
		e.WaitRecord("a write record of "+rel+" after fallocate "+m, func(r *ledger.Record) bool {
			return r.Path() == rel && ledger.Str(r.Gov().PostHash) == want
		})
	}
	testenv.VerifyClean(t, e.Src)
}

// atFlagsProbe changes times and extended attributes through a symlink in
// scope that points out of it, with and without AT_SYMLINK_NOFOLLOW.
const atFlagsProbe = `
import errno, os
def outcome(name, fn):
    try:
        fn(); print("%s: ok" % name)
    except OSError as e:
        print("%s: %s" % (name, errno.errorcode.get(e.errno, str(e.errno))))
outcome("utimes nofollow", lambda: os.utime("src/link", (1, 1), follow_symlinks=False))
outcome("utimes follow", lambda: os.utime("src/link", (2, 2)))
outcome("setxattr follow", lambda: os.setxattr("src/link", "user.x", b"1"))
outcome("setxattr nofollow", lambda: os.setxattr("src/link", "user.x", b"1", follow_symlinks=False))
`

// TestAtFlagsDecideTheInodeTheyReach: AT_SYMLINK_NOFOLLOW and its absence
// pick which inode a utimensat or setxattr changes; the change is decided
// on that inode's path. Through a symlink in scope, the out-of-scope file
// it points at is not changed.
func TestAtFlagsDecideTheInodeTheyReach(t *testing.T) {
	testenv.Serial(t)
	e := testenv.MountPrepared(t, testenv.ScopePolicy, "INT-001", map[string]string{"lib/secret.txt": "secret\n", "src/.keep": ""}, func(src string) {
		if err := os.Symlink("../lib/secret.txt", filepath.Join(src, "src/link")); err != nil {
			t.Fatal(err)
		}
		testenv.ChownTree(t, src)
	})
	e.ReachableByAgent()
	var before syscall.Stat_t
	if err := syscall.Stat(filepath.Join(e.Src, "lib/secret.txt"), &before); err != nil {
		t.Fatal(err)
	}
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "/usr/bin/python3 "+testenv.WorldReadable(t, "at.py", atFlagsProbe))
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	t.Logf("probe:\n%s", out)
	for _, want := range []string{"utimes nofollow: ok", "utimes follow: EACCES", "setxattr follow: EACCES"} {
		if !strings.Contains(out, want) {
			t.Errorf("probe output lacks %q", want)
		}
	}
	var after syscall.Stat_t
	if err := syscall.Stat(filepath.Join(e.Src, "lib/secret.txt"), &after); err != nil {
		t.Fatal(err)
	}
	if after.Mtim != before.Mtim {
		t.Errorf("lib/secret.txt's mtime changed through src/link")
	}
	if sz, _ := syscall.Getxattr(filepath.Join(e.Src, "lib/secret.txt"), "user.x", nil); sz > 0 {
		t.Errorf("lib/secret.txt got user.x through src/link")
	}
	testenv.VerifyClean(t, e.Src)
}
