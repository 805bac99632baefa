package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockFile keeps a ledger to exactly one writer: a mount, or a CLI command
// that changes an unmounted source. A second holder is refused with the
// first one's name and pid.
const LockFile = ".orchestration/.intentfs.lock"

type lockInfo struct {
	Pid        int    `json:"pid"`
	Mountpoint string `json:"mountpoint"`
}

// ErrAlreadyMounted is returned when the source is mounted elsewhere.
var ErrAlreadyMounted = errors.New("source is already mounted")

// AcquireLock takes the source's lock for holder (a mountpoint, or a
// description of a CLI command). The flock is released by the kernel when
// the holder dies, so a crash never leaves the source locked. Close the
// file to release it.
func AcquireLock(source, holder string) (*os.File, error) {
	path := filepath.Join(source, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, lockOpenError(path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		var li lockInfo
		b, _ := os.ReadFile(path)
		f.Close()
		if json.Unmarshal(b, &li) == nil && li.Pid > 0 {
			return nil, fmt.Errorf("%w: %s is in use by %s (pid %d); unmount it first", ErrAlreadyMounted, source, li.Mountpoint, li.Pid)
		}
		return nil, fmt.Errorf("%w: %s is locked (%s)", ErrAlreadyMounted, source, path)
	}
	// Who holds the lock is what a second holder's error names, so a
	// lock whose holder cannot be written is refused rather than held
	// anonymously.
	b, err := json.Marshal(lockInfo{Pid: os.Getpid(), Mountpoint: holder})
	if err == nil {
		if err = f.Truncate(0); err == nil {
			_, err = f.WriteAt(append(b, '\n'), 0)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the lock holder to %s: %w", path, err)
	}
	return f, nil
}

// lockOpenError explains a lock that cannot be opened. The usual cause is
// a lock file left by a mount run as another user (root, say): the flock
// is gone with that mount, but the file stays, owned by that user, and
// another user may not open it for writing.
func lockOpenError(path string, err error) error {
	if !errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("opening lock %s: %w", path, err)
	}
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil {
		return fmt.Errorf("opening lock %s: %w: this user (uid %d) may not create it in %s; mount as the user who owns the source, or as root",
			path, err, os.Geteuid(), filepath.Dir(path))
	}
	holder := ""
	if li, ok := readLockInfo(path); ok {
		alive := syscall.Kill(li.Pid, 0) != syscall.ESRCH
		state := "no longer running"
		if alive {
			state = "still running: unmount it first"
		}
		holder = fmt.Sprintf(" it was last held by pid %d for %s (%s);", li.Pid, li.Mountpoint, state)
	}
	return fmt.Errorf("opening lock %s: %w: the lock file belongs to uid %d, not to this user (uid %d): it was left by a mount or command run as that user;%s "+
		"run intentfs as uid %d (sudo intentfs ...), or, once nothing holds it, remove it: sudo rm %s (intentfs doctor checks this)",
		path, err, st.Uid, os.Geteuid(), holder, st.Uid, path)
}

// readLockInfo reads who last held a lock: a regular file, not a link,
// a few bytes, never blocking.
func readLockInfo(path string) (lockInfo, bool) {
	var li lockInfo
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return li, false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return li, false
	}
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	return li, json.Unmarshal(b[:n], &li) == nil && li.Pid > 0
}
