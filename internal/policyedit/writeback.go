package policyedit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/intentfs/intentfs/internal/procinfo"
	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/policy"
)

// maxWriteAttempts bounds how often UpdateFile re-applies an edit when the
// file changes underneath it.
const maxWriteAttempts = 5

// ErrConcurrentEdit is returned when the policy kept changing while an
// update was attempted.
var ErrConcurrentEdit = errors.New("the policy file kept changing while intentfs tried to update it; try again")

// UpdateFile applies edit to the file at path. Writers from intentfs are
// serialized by a lock file; a human editing the file at the same time is
// detected by re-reading it just before the new version is renamed into
// place: if it changed since it was read, the edit is applied again to the
// new text, so the human's edit is never lost. The write is atomic (a
// temporary file in the same directory, fsync'ed, then renamed).
func UpdateFile(path string, edit func(data []byte) ([]byte, error)) error {
	return updateFile(path, edit, lockWait)
}

func updateFile(path string, edit func(data []byte) ([]byte, error), wait time.Duration) error {
	unlock, err := lockFile(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock"), wait)
	if err != nil {
		return err
	}
	defer unlock()
	for range maxWriteAttempts {
		// The policy sits in a workspace: read it as the engine does
		// (no symlink, regular, bounded), or a FIFO in its place would
		// hang every select.
		data, err := safeio.ReadFile(filepath.Dir(path), filepath.Base(path), policy.MaxPolicyBytes)
		if err != nil {
			return err
		}
		st, err := os.Lstat(path)
		if err != nil {
			return err
		}
		out, err := edit(data)
		if err != nil {
			return err
		}
		tmp, err := safeio.WriteTemp(path, out, st.Mode().Perm())
		if err != nil {
			return err
		}
		if err := keepOwner(tmp, st); err != nil {
			os.Remove(tmp)
			return err
		}
		cur, err := safeio.ReadFile(filepath.Dir(path), filepath.Base(path), policy.MaxPolicyBytes)
		if err != nil || !bytes.Equal(cur, data) {
			os.Remove(tmp)
			continue // changed while we worked: apply the edit to the new text
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("replacing %s: %w", path, err)
		}
		return syncDir(filepath.Dir(path))
	}
	return ErrConcurrentEdit
}

// keepOwner gives the new version at tmp the owner of the file it
// replaces, which a daemon running as root would otherwise take over:
// the human who owns the policy must still be able to edit it.
func keepOwner(tmp string, old os.FileInfo) error {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid()) {
		return nil
	}
	if err := os.Lchown(tmp, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("keeping the owner %d:%d of the policy file: %w", st.Uid, st.Gid, err)
	}
	// chown may clear the mode's set-id bits; put the mode back as it was.
	if err := os.Chmod(tmp, old.Mode().Perm()); err != nil {
		return fmt.Errorf("keeping the mode of the policy file: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// lockWait bounds how long an update waits for another writer's lock: a
// human's command (intentfs intent block, the way to stop an agent) must
// never wait on a lock without end, whoever holds it.
const lockWait = 10 * time.Second

// ErrLocked is returned when the policy's lock stayed held for the whole
// wait.
var ErrLocked = errors.New("the policy is locked by another writer")

// lockFile takes an exclusive flock on path, creating it, waiting at most
// wait for another holder to let go. A lock file the daemon (root)
// creates belongs to the owner of its directory, so the policy's owner
// can still take the lock to edit it after the mount ends.
func lockFile(path string, wait time.Duration) (func(), error) {
	owner, err := safeio.OwnerFor(path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := owner.Set(int(f.Fd())); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	pause := 10 * time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			err = lockError(f, path, wait, err)
			f.Close()
			return nil, err
		}
		time.Sleep(pause)
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// lockError says why path could not be locked, naming who holds it.
func lockError(f *os.File, path string, wait time.Duration, err error) error {
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	holders := "a process this user cannot see"
	if hs, herr := procinfo.LockHolders(f); herr == nil && len(hs) > 0 {
		names := make([]string, len(hs))
		for i, h := range hs {
			names[i] = textsafe.Escape(h.String())
		}
		holders = strings.Join(names, "; ")
	}
	return fmt.Errorf("%w: %s stayed locked for %v, held by %s; stop that process or try again when it is done", ErrLocked, path, wait, holders)
}
