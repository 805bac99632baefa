// Package objects is the content-addressed store of pre-images: the bytes
// of every version a change destroyed, under .orchestration/objects/
// sha256/ab/cdef…, so any recorded change can be shown and undone.
package objects

import (
	"path/filepath"
	"strings"
	"syscall"
)

// Dir is the store's directory, relative to the source.
const Dir = ".orchestration/objects"

// Store is the object store of one source directory.
type Store struct {
	root string
}

// New returns the store of source.
func New(source string) *Store { return &Store{root: filepath.Join(source, Dir)} }

// Path is where the bytes of hash ("sha256:<hex>") live.
func (s *Store) Path(hash string) (string, bool) {
	hex, ok := strings.CutPrefix(hash, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", false
	}
	return filepath.Join(s.root, "sha256", hex[:2], hex[2:]), true
}

// Has reports whether the bytes of hash are stored.
func (s *Store) Has(hash string) bool {
	p, ok := s.Path(hash)
	if !ok {
		return false
	}
	var st syscall.Stat_t
	return syscall.Stat(p, &st) == nil
}
