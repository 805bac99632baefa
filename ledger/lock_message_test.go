package ledger

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLockOpenErrorNamesTheOwnerAndTheFix: a lock file left by a mount
// run as another user refuses this user with EACCES; the error says whose
// it is, whether its holder still runs, and what to do.
func TestLockOpenErrorNamesTheOwnerAndTheFix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".intentfs.lock")
	if err := os.WriteFile(path, []byte(`{"pid":999999999,"mountpoint":"/ws"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	denied := &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}
	got := lockOpenError(path, denied).Error()
	for _, w := range []string{"opening lock " + path, "belongs to uid", "last held by pid 999999999 for /ws (no longer running)", "sudo rm " + path, "intentfs doctor"} {
		if !strings.Contains(got, w) {
			t.Errorf("error lacks %q:\n%s", w, got)
		}
	}
	other := &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	if got := lockOpenError(path, other).Error(); strings.Contains(got, "sudo") {
		t.Errorf("a missing directory got the permission advice: %s", got)
	}
}

// TestLockOpenErrorAsksTheFlockWhetherItsHolderRuns: whether a lock's
// holder still runs is the flock's answer, not the recorded pid's: a
// container's daemon records pid 1 of its own namespace, and pid 1 always
// runs on the host, so a lock left by a finished container read "still
// running" and sent the user to unmount a mount that was gone.
func TestLockOpenErrorAsksTheFlockWhetherItsHolderRuns(t *testing.T) {
	denied := func(path string) error { return &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission} }
	for _, tc := range []struct {
		name string
		held bool
		want string
	}{
		{"left by a finished container", false, "last held by pid 1 for the mount at /workspace (no longer running)"},
		{"held by a running mount", true, "last held by pid 1 for the mount at /workspace (still running: unmount it first)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".intentfs.lock")
			if err := os.WriteFile(path, []byte(`{"pid":1,"mountpoint":"the mount at /workspace"}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.held {
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
					t.Fatal(err)
				}
			}
			if got := lockOpenError(path, denied(path)).Error(); !strings.Contains(got, tc.want) {
				t.Errorf("error lacks %q:\n%s", tc.want, got)
			}
		})
	}
}
