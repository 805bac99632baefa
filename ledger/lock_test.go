package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func lockSource(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	if err := os.Mkdir(filepath.Join(src, ".orchestration"), 0o755); err != nil {
		t.Fatal(err)
	}
	return src
}

func TestAcquireLockNamesTheHolder(t *testing.T) {
	src := lockSource(t)
	f, err := AcquireLock(src, "the mount at /work")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := AcquireLock(src, "`intentfs revert`"); !errors.Is(err, ErrAlreadyMounted) || !strings.Contains(err.Error(), "the mount at /work") {
		t.Fatalf("second holder: %v, want ErrAlreadyMounted naming the first", err)
	}
}

// TestAcquireLockRefusesAnUnwritableHolder: a lock whose holder could not
// be written would leave a second holder's error without a name; it is
// refused instead. A FIFO takes the flock but cannot be truncated.
func TestAcquireLockRefusesAnUnwritableHolder(t *testing.T) {
	src := lockSource(t)
	if err := syscall.Mkfifo(filepath.Join(src, LockFile), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := AcquireLock(src, "the mount at /work")
	if err == nil {
		f.Close()
		t.Fatal("a lock whose holder cannot be written was taken")
	}
	if !strings.Contains(err.Error(), "writing the lock holder") {
		t.Fatalf("error %q does not say what failed", err)
	}
}

// TestRootLockBelongsToTheSourceOwner: a lock root takes in a checkout
// that belongs to a user ends up that user's, so the user's own commands
// can take it once root's mount is gone.
func TestRootLockBelongsToTheSourceOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root's locks change owner")
	}
	src := t.TempDir()
	orch := filepath.Join(src, ".orchestration")
	if err := os.Mkdir(orch, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(orch, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	f, err := AcquireLock(src, "the mount at /m")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(src, LockFile), &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 1000 || st.Gid != 1000 {
		t.Fatalf("lock belongs to %d:%d, want the directory's owner 1000:1000", st.Uid, st.Gid)
	}
}
