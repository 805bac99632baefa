package ledger

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
