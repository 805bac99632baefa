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
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
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
