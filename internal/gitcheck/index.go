// Package gitcheck decides whether commits are accounted for by the
// ledger: every path a commit changes must have been written through the
// mount, under an intent whose scope covers it, with the content the
// commit holds. It is the engine of `intentfs check`, and of any later
// check of one new commit ("would this commit pass?", CheckCommit).
package gitcheck

import (
	"sync"

	"github.com/intentfs/intentfs/ledger"
)

// Entry is one record the index holds, with its position among the
// records added (ledger order).
type Entry struct {
	Seq    int
	Record *ledger.Record
}

// Index finds the records that could account for a committed change: by
// path and content hash for files, by path for deletions, symlinks and
// mode changes. Paths are the ledger's (relative to the workspace).
//
// It is safe for concurrent use: the mount adds each record as it is
// written while a commit is being checked. A slice it returned stays valid:
// entries are only ever appended.
type Index struct {
	mu       sync.RWMutex
	content  map[string][]Entry // path + "\x00" + post_hash
	written  map[string]int     // records with content per path
	deleted  map[string][]Entry // path
	symlinks map[string][]Entry // path
	modes    map[string][]Entry // path (chmod)
	ids      map[string]bool
	n        int
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{content: map[string][]Entry{}, written: map[string]int{}, deleted: map[string][]Entry{},
		symlinks: map[string][]Entry{}, modes: map[string][]Entry{}, ids: map[string]bool{}}
}

func contentKey(path, hash string) string { return path + "\x00" + hash }

// Len is the number of records added.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.n
}

// Add indexes a record. A record id already added is skipped, so the
// local ledger and the notes can both be added.
func (ix *Index) Add(r *ledger.Record) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if r.ID != "" {
		if ix.ids[r.ID] {
			return
		}
		ix.ids[r.ID] = true
	}
	e := Entry{Seq: ix.n, Record: r}
	ix.n++
	g := r.Gov()
	p := r.Path()
	switch g.Event {
	case ledger.EventCreate, ledger.EventWrite, ledger.EventTruncate, ledger.EventRename, ledger.EventRevert:
		if post := ledger.Str(g.PostHash); post != "" && p != "" {
			k := contentKey(p, post)
			ix.content[k] = append(ix.content[k], e)
			ix.written[p]++
		}
		if g.Event == ledger.EventRename && g.FromPath != "" {
			// A move deletes its old name.
			ix.deleted[g.FromPath] = append(ix.deleted[g.FromPath], e)
		}
		if g.Event == ledger.EventRevert && g.PostHash == nil && p != "" {
			ix.deleted[p] = append(ix.deleted[p], e)
		}
	case ledger.EventDelete:
		ix.deleted[p] = append(ix.deleted[p], e)
	case ledger.EventSymlink:
		ix.symlinks[p] = append(ix.symlinks[p], e)
	case ledger.EventChmod:
		ix.modes[p] = append(ix.modes[p], e)
	}
}

// Written returns the records whose content at path has hash.
func (ix *Index) Written(path, hash string) []Entry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.content[contentKey(path, hash)]
}

// WroteAny reports whether any record wrote content at path.
func (ix *Index) WroteAny(path string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.written[path] > 0
}

// Deleted returns the records that removed path.
func (ix *Index) Deleted(path string) []Entry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.deleted[path]
}

// Symlinks returns the records that created a symlink at path.
func (ix *Index) Symlinks(path string) []Entry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.symlinks[path]
}

// Modes returns the chmod records of path.
func (ix *Index) Modes(path string) []Entry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.modes[path]
}
