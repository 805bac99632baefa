package cli

import (
	"os/exec"

	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSourcePermissionChangesReachTheMount: a chmod, chown or ACL change
// made directly in the source, of a directory the agent has listed (so
// the kernel and the daemon hold its listing) or of a file it has read,
// refuses the agent through the mount within the watch's latency.
func TestSourcePermissionChangesReachTheMount(t *testing.T) {
	// Serial: asserts how soon a change in the source shows through the mount, which a loaded machine stretches.
	testenv.Serial(t)
	e := testenv.MountPrepared(t, testenv.ScopePolicy, "INT-002", map[string]string{
		"modedir/a.txt": "a\n", "modedir/sub/b.txt": "b\n",
		"owndir/a.txt": "a\n", "acldir/a.txt": "a\n", "file.txt": "secret\n"},
		func(src string) {
			// owndir belongs to the agent and only it may list it.
			if err := os.Chown(filepath.Join(src, "owndir"), 1000, 1000); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(src, "owndir"), 0o700); err != nil {
				t.Fatal(err)
			}
		})
	src := func(p string) string { return filepath.Join(e.Src, p) }
	// Cache each directory's listing and its entries' attributes, and the
	// file's attributes and pages, as the agent.
	for _, script := range []string{"ls -la modedir modedir/sub", "ls -la owndir", "ls -la acldir", "cat file.txt", "cat modedir/a.txt",
		"ls -la modedir modedir/sub && ls owndir acldir && cat file.txt modedir/a.txt"} {
		if out, err := e.ShAs(1000, 1000, script); err != nil {
			t.Fatalf("as uid 1000 before any change: %s: %v\n%s", script, err, out)
		}
	}

	t.Run("chmod of a directory", func(t *testing.T) {
		start := time.Now()
		if err := os.Chmod(src("modedir"), 0o700); err != nil {
			t.Fatal(err)
		}
		e.RefusedWithin(t, "chmod 700 modedir", "ls modedir", start)
		// Below it, too: a name cached in the kernel is not reachable
		// without search permission on its directory.
		for _, script := range []string{"cat modedir/a.txt", "ls modedir/sub", "stat modedir/sub/b.txt"} {
			if out, err := e.ShAs(1000, 1000, script); err == nil || !strings.Contains(out, "Permission denied") {
				t.Fatalf("below a root-owned 0700 directory, uid 1000: %s: want Permission denied, got %v\n%s", script, err, out)
			}
		}
		// The owner still lists it.
		if out, err := e.Sh("ls modedir"); err != nil || !testenv.HasLine(out, "a.txt") {
			t.Fatalf("root cannot list modedir through the mount: %v\n%s", err, out)
		}
	})
	t.Run("chown of a directory", func(t *testing.T) {
		start := time.Now()
		if err := os.Chown(src("owndir"), 2000, 2000); err != nil {
			t.Fatal(err)
		}
		e.RefusedWithin(t, "chown 2000 owndir", "ls owndir", start)
	})
	t.Run("ACL of a directory", func(t *testing.T) {
		start := time.Now()
		if out, err := exec.Command("setfacl", "-m", "u:1000:---", src("acldir")).CombinedOutput(); err != nil {
			t.Fatalf("setfacl: %v\n%s", err, out)
		}
		e.RefusedWithin(t, "setfacl u:1000:--- acldir", "ls acldir", start)
	})
	t.Run("chmod of a file", func(t *testing.T) {
		start := time.Now()
		if err := os.Chmod(src("file.txt"), 0o600); err != nil {
			t.Fatal(err)
		}
		e.RefusedWithin(t, "chmod 600 file.txt", "cat file.txt", start)
	})
}
