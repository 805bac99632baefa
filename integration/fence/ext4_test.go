package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ext4Source returns an empty directory on a freshly made ext4 image,
// loop-mounted with POSIX ACLs, and removes it all in t.Cleanup. The
// adversarial tests use it: the source must be a real disk filesystem
// with ACLs, reserved blocks and inode flags, as an agent's checkout is.
// Where an image cannot be made and mounted here, the test skips, or
// fails under INTENTFS_REQUIRE_FUSE=1.
func ext4Source(t *testing.T) string {
	t.Helper()
	testenv.RequireFUSE(t)
	why := ""
	for _, tool := range []string{"mkfs.ext4", "setfacl", "getfacl"} {
		if _, err := exec.LookPath(tool); err != nil {
			why = tool + " is not installed (Debian: e2fsprogs, acl)"
		}
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "src.img"), filepath.Join(dir, "src")
	if why == "" {
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("truncate", "-s", "64M", img).CombinedOutput(); err != nil {
			why = "making the image: " + string(out)
		} else if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "5", img).CombinedOutput(); err != nil {
			why = "mkfs.ext4: " + string(out)
		} else if out, err := exec.Command("mount", "-o", "loop,acl", img, mnt).CombinedOutput(); err != nil {
			why = "loop-mounting an ext4 image: " + string(out)
		}
	}
	if why != "" {
		if os.Getenv("INTENTFS_REQUIRE_FUSE") == "1" {
			t.Fatalf("an ext4 source is required (INTENTFS_REQUIRE_FUSE=1) but %s", why)
		}
		t.Skipf("skipping: %s", why)
	}
	t.Cleanup(func() {
		// The FUSE mount above it is gone by now. The in-process daemon may
		// still hold directory descriptors of nodes the kernel has not
		// forgotten (a daemon process closes them when it exits), so the
		// image is detached lazily if a plain umount finds it busy.
		if exec.Command("umount", mnt).Run() != nil {
			if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
				t.Errorf("unmounting the ext4 source: %v\n%s", err, out)
			}
		}
	})
	if err := os.Chmod(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(mnt, "lost+found")); err != nil {
		t.Fatal(err)
	}
	return mnt
}

// mountFence is mountPrepared on an ext4Source: the adversarial tests run
// against the filesystem an agent's checkout really sits on.
func mountFence(t *testing.T, policyYAML, intent string, seed map[string]string, prepare func(src string)) *testenv.Env {
	t.Helper()
	return testenv.MountAt(t, ext4Source(t), policyYAML, intent, seed, prepare)
}
