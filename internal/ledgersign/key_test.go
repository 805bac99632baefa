package ledgersign

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func sshKeygen(t *testing.T, path string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	args = append([]string{"-q", "-t", "ed25519", "-C", "test", "-f", path}, args...)
	if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
}

// TestLoadKeyRefusesKeysOthersCouldReadOrSwap: the daemon takes only a
// regular file, not through a symlink, owned by root or the human, that
// no one else may read, and without a passphrase; and it never blocks on
// what it opens.
func TestLoadKeyRefusesKeysOthersCouldReadOrSwap(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "id_ed25519")
	sshKeygen(t, key, "-N", "")
	me := os.Getuid()
	if s, err := LoadKey(key, me); err != nil || s == nil {
		t.Fatalf("a 0600 key of the user's own: %v", err)
	}
	readable := filepath.Join(dir, "readable")
	data, _ := os.ReadFile(key)
	if err := os.WriteFile(readable, data, 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(readable, 0o640)
	link := filepath.Join(dir, "link")
	os.Symlink(key, link)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(dir, "locked")
	sshKeygen(t, locked, "-N", "a passphrase")
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("not a key\n"), 0o600)
	cases := []struct{ name, path, want string }{
		{"readable by the group", readable, "chmod 600"},
		{"a symlink", link, "symlink"},
		{"a FIFO", fifo, "not a regular file"},
		{"a passphrase", locked, "passphrase"},
		{"not a key", garbage, "not an SSH private key"},
		{"missing", filepath.Join(dir, "nothing"), "no such file"},
		{"a directory", dir, "not a regular file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LoadKey(tc.path, me); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("LoadKey(%s): %v, want an error naming the file and %q", tc.path, err, tc.want)
			}
		})
	}
	if me == 0 {
		other := filepath.Join(dir, "other")
		os.WriteFile(other, data, 0o600)
		if err := os.Chown(other, 1234, 1234); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKey(other, 1000); err == nil || !strings.Contains(err.Error(), "owned by uid 1234") {
			t.Fatalf("a key owned by another user: %v", err)
		}
		if _, err := LoadKey(other, 1234); err != nil {
			t.Fatalf("the human's own key, read by root: %v", err)
		}
	}
}
