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
	giveLockToSourceOwner(f, filepath.Dir(path))
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

// giveLockToSourceOwner makes a lock file that root holds belong to the
// owner of the directory it lies in, as every file the daemon writes keeps
// the checkout's owner: a lock left owned by root (a root mount, a
// container's daemon) would otherwise refuse the owner's own commands
// (hook install, accept) until someone removed it with sudo. The owner
// gains nothing: the directory is theirs, and a flock needs only read
// access. Best effort: a lock that cannot be handed over still locks.
func giveLockToSourceOwner(f *os.File, dir string) {
	if os.Geteuid() != 0 {
		return
	}
	var fst, dst syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &fst) != nil || syscall.Lstat(dir, &dst) != nil {
		return
	}
	if fst.Uid != dst.Uid || fst.Gid != dst.Gid {
		_ = syscall.Fchown(int(f.Fd()), int(dst.Uid), int(dst.Gid))
	}
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
		state := "no longer running"
		switch lockHeld(path) {
		case lockHeldYes:
			state = "still running: unmount it first"
		case lockHeldUnknown:
			state = "it may still run"
		}
		holder = fmt.Sprintf(" it was last held by pid %d for %s (%s);", li.Pid, li.Mountpoint, state)
	}
	return fmt.Errorf("opening lock %s: %w: the lock file belongs to uid %d, not to this user (uid %d): it was left by a mount or command run as that user;%s "+
		"run intentfs as uid %d (sudo intentfs ...), or, once nothing holds it, remove it: sudo rm %s (intentfs doctor checks this)",
		path, err, st.Uid, os.Geteuid(), holder, st.Uid, path)
}

type lockHolding int

const (
	lockHeldNo lockHolding = iota
	lockHeldYes
	lockHeldUnknown
)

// lockHeld asks the kernel whether a holder still has the lock: a shared
// flock on a read-only descriptor is refused while an exclusive one is
// held. The pid a lock records cannot say it: a holder in another pid
// namespace (a container's daemon is pid 1 there) names a process that
// may be a different one here.
func lockHeld(path string) lockHolding {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return lockHeldUnknown
	}
	defer f.Close()
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); {
	case err == nil:
		return lockHeldNo
	case errors.Is(err, syscall.EWOULDBLOCK):
		return lockHeldYes
	default:
		return lockHeldUnknown
	}
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
