package policyedit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/intentfs/intentfs/internal/safeio"
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
	unlock, err := lockFile(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock"))
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// lockFile takes an exclusive flock on path, creating it. A lock file
// the daemon (root) creates belongs to the owner of its directory, so the
// policy's owner can still take the lock to edit it after the mount ends.
func lockFile(path string) (func(), error) {
	owner, err := safeio.OwnerFor(path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := owner.Set(int(f.Fd())); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
