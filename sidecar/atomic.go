// Package sidecar keeps the human-readable files beside the policy:
// intent_map.md (which files each intent touched) and the lessons learned
// in CLAUDE.md. Both are written in the source directory, never through the
// mount, atomically, and without disturbing text a human wrote.
package sidecar

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeAtomic replaces path with data: a temporary file in the same
// directory, fsync'ed, renamed over the original.
func writeAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
