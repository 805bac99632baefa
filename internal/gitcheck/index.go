// Package gitcheck decides whether commits are accounted for by the
// ledger: every path a commit changes must have been written through the
// mount, under an intent whose scope covers it, with the content the
// commit holds. It is the engine of `intentfs check`, and of the commit
// gate's check of the commits a branch moves to (CheckNew).
package gitcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/intentfs/intentfs/ledger"
)

// Entry is what the index keeps of one record, with its position among
// the records added (ledger order): enough to judge a change and name the
// record, a few dozen bytes rather than the whole record, because the
// index of a long-lived mount holds every record of its ledger.
type Entry struct {
	Seq    int
	ID     string
	Event  ledger.Event
	Intent string
	// Code is the record's decision code (policy.CodeExempt marks
	// intentfs's own writes).
	Code string
	// RestoredFrom is where git restored the content from (the
	// record's restored_from): set, the record is git putting back
	// content that existed, not the intent's authorship.
	RestoredFrom string
	// Hash, on a symlink's record, is the sha256 of its target, ""
	// when the record predates it.
	Hash string
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
	content  map[contentKey][]Entry
	written  map[string]int     // records with content per path
	deleted  map[string][]Entry // path
	symlinks map[string][]Entry // path
	modes    map[string][]Entry // path (chmod)
	ids      map[uuid.UUID]struct{}
	otherIDs map[string]struct{} // ids that are not UUIDs (notes from elsewhere)
	// strings holds one copy of each path, intent and code: a path
	// written ten thousand times is kept once.
	strings map[string]string
	n       int
}

// contentKey is a path and a content hash: sha256 as its 32 bytes, any
// other form as given.
type contentKey struct {
	path  string
	sum   [sha256.Size]byte
	other string
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{content: map[contentKey][]Entry{}, written: map[string]int{}, deleted: map[string][]Entry{},
		symlinks: map[string][]Entry{}, modes: map[string][]Entry{}, ids: map[uuid.UUID]struct{}{},
		otherIDs: map[string]struct{}{}, strings: map[string]string{}}
}

func makeContentKey(path, hash string) contentKey {
	k := contentKey{path: path}
	if h, ok := strings.CutPrefix(hash, "sha256:"); ok && len(h) == 2*sha256.Size {
		if _, err := hex.Decode(k.sum[:], []byte(h)); err == nil && strings.ToLower(h) == h {
			return k
		}
	}
	return contentKey{path: path, other: hash}
}

// intern returns the index's copy of s. Called with mu held.
func (ix *Index) intern(s string) string {
	if c, ok := ix.strings[s]; ok {
		return c
	}
	ix.strings[s] = s
	return s
}

// seen reports whether a record id was added before, and notes it. Called
// with mu held.
func (ix *Index) seen(id string) bool {
	if id == "" {
		return false
	}
	if u, err := uuid.Parse(id); err == nil && u.String() == id {
		if _, ok := ix.ids[u]; ok {
			return true
		}
		ix.ids[u] = struct{}{}
		return false
	}
	if _, ok := ix.otherIDs[id]; ok {
		return true
	}
	ix.otherIDs[id] = struct{}{}
	return false
}

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
	if ix.seen(r.ID) {
		return
	}
	g := r.Gov()
	e := Entry{Seq: ix.n, ID: r.ID, Event: ledger.Event(ix.intern(string(g.Event))), Intent: ix.intern(ledger.Str(g.IntentID)), Code: ix.intern(g.Code),
		RestoredFrom: ix.intern(g.RestoredFrom)}
	ix.n++
	p := ix.intern(r.Path())
	switch g.Event {
	case ledger.EventCreate, ledger.EventWrite, ledger.EventTruncate, ledger.EventRename, ledger.EventRevert:
		if post := ledger.Str(g.PostHash); post != "" && p != "" {
			k := makeContentKey(p, post)
			ix.content[k] = append(ix.content[k], e)
			ix.written[p]++
		}
		if g.Event == ledger.EventRename && g.FromPath != "" {
			// A move deletes its old name.
			from := ix.intern(g.FromPath)
			ix.deleted[from] = append(ix.deleted[from], e)
		}
		if g.Event == ledger.EventRevert && g.PostHash == nil && p != "" {
			ix.deleted[p] = append(ix.deleted[p], e)
		}
	case ledger.EventDelete:
		ix.deleted[p] = append(ix.deleted[p], e)
	case ledger.EventAccept:
		// A human took the path as it was: its content (or its absence)
		// and its mode are accounted for.
		if post := ledger.Str(g.PostHash); post != "" && p != "" {
			k := makeContentKey(p, post)
			ix.content[k] = append(ix.content[k], e)
			ix.written[p]++
			ix.modes[p] = append(ix.modes[p], e)
		} else if p != "" {
			ix.deleted[p] = append(ix.deleted[p], e)
		}
	case ledger.EventSymlink:
		// The target's hash, where the record has it (records made
		// before it was recorded have none, and account for any target).
		e.Hash = ix.intern(ledger.Str(g.PostHash))
		ix.symlinks[p] = append(ix.symlinks[p], e)
	case ledger.EventChmod:
		ix.modes[p] = append(ix.modes[p], e)
	}
}

// Written returns the records whose content at path has hash.
func (ix *Index) Written(path, hash string) []Entry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.content[makeContentKey(path, hash)]
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

// Symlinks returns the records that created a symlink at path pointing
// where the committed link (whose blob's sha256 is hash) points.
func (ix *Index) Symlinks(path, hash string) []Entry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var out []Entry
	for _, e := range ix.symlinks[path] {
		if e.Hash == "" || e.Hash == hash {
			out = append(out, e)
		}
	}
	return out
}

// HasSymlink reports whether any record created a symlink at path.
func (ix *Index) HasSymlink(path string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.symlinks[path]) > 0
}

// Modes returns the chmod records of path.
func (ix *Index) Modes(path string) []Entry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.modes[path]
}
