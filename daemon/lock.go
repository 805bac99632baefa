package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/intentfs/intentfs/policy"
)

// LockFile keeps a source directory from being mounted twice: the ledger
// must have exactly one writer.
const LockFile = policy.OrchestrationDir + "/.intentfs.lock"

type lockInfo struct {
	Pid        int    `json:"pid"`
	Mountpoint string `json:"mountpoint"`
}

// ErrAlreadyMounted is returned when the source is mounted elsewhere.
var ErrAlreadyMounted = errors.New("source is already mounted")

// acquireLock takes the source's lock. The flock is released by the
// kernel when the daemon dies, so a crash never leaves the source locked.
func acquireLock(source, mountpoint string) (*os.File, error) {
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
			return nil, fmt.Errorf("%w: %s is mounted at %s by pid %d; unmount it first", ErrAlreadyMounted, source, li.Mountpoint, li.Pid)
		}
		return nil, fmt.Errorf("%w: %s is locked (%s)", ErrAlreadyMounted, source, path)
	}
	b, _ := json.Marshal(lockInfo{Pid: os.Getpid(), Mountpoint: mountpoint})
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(append(b, '\n'), 0)
	}
	return f, nil
}
