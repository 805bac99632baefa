package objects

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The store grows with every version a change destroys, and the daemon,
// usually root, writes the copies: without a bound an agent that rewrites
// a large file in a loop fills the filesystem with root-owned bytes, past
// its own quota and into the blocks reserved for root. So a daemon's store
// has a bound on the bytes it copied, and a copy that would pass it, or
// that would take space unprivileged users cannot take (statfs f_bavail),
// is refused: the caller then refuses the change (a change whose
// pre-image cannot be kept is not made). A pre-image hard-linked in from
// a removed file is not a copy: its blocks were the file's, stay its
// owner's (on that user's quota) and are never refused, so removing a
// large tree does not stop every later edit.
const (
	// DefaultMaxBytes caps the default bound.
	DefaultMaxBytes int64 = 2 << 30
	// DefaultMaxPercent is the default bound's share of the store's
	// filesystem, when that is less than DefaultMaxBytes.
	DefaultMaxPercent = 10
	// headroomBytes stays free for unprivileged users beyond a copy, so
	// the ledger and the agent's next small write still fit.
	headroomBytes = 256 << 10
	// recountEvery throttles walking the store to correct the running
	// count (intentfs gc, run by another process, frees objects).
	recountEvery = 2 * time.Second
)

// UnknownUID stands for a copy whose cause has no uid (the daemon's own).
const UnknownUID = ^uint32(0)

// Usage is the store's use against its bound.
type Usage struct {
	// Bytes and Objects are what the store holds.
	Bytes   int64 `json:"bytes"`
	Objects int   `json:"objects"`
	// CopiedBytes are the bytes of the objects the daemon copied in,
	// which MaxBytes bounds (the rest were linked from removed files).
	CopiedBytes int64 `json:"copied_bytes"`
	// MaxBytes is the bound (0: none, a store read by the CLI).
	MaxBytes int64 `json:"max_bytes"`
	// AvailBytes is the filesystem's space for unprivileged users
	// (statfs f_bavail), which the daemon never writes past.
	AvailBytes int64 `json:"fs_avail_bytes"`
	// CopiedByUID is what the daemon copied into the store since it
	// started, by the uid whose change needed the copy.
	CopiedByUID map[uint32]int64 `json:"copied_by_uid,omitempty"`
	// Refused counts copies refused since the daemon started.
	Refused int64 `json:"refused"`
}

// UnavailableError is a copy the store refused: over its bound, or past
// the space the filesystem leaves unprivileged users.
type UnavailableError struct {
	Size, Used, Max int64
	// Avail is f_bavail in bytes when the filesystem is the reason (else -1).
	Avail int64
}

func (e *UnavailableError) Error() string {
	if e.Avail >= 0 {
		return fmt.Sprintf("the object store's filesystem has %d bytes available to unprivileged users, too few for this %d-byte version: the daemon does not write into root's reserved blocks; free space, or run `intentfs gc`", e.Avail, e.Size)
	}
	return fmt.Sprintf("this %d-byte version does not fit in the object store, whose copies take %d bytes of its %d-byte bound: run `intentfs gc` to drop pre-images no record needs, raise the bound (intentfs mount --store-max-bytes), or give up undo for files this large (intentfs mount --keep-max-bytes)", e.Size, e.Used, e.Max)
}

// Is makes errors.Is(err, syscall.ENOSPC) true: the store is full.
func (e *UnavailableError) Is(target error) bool { return target == syscall.ENOSPC }

// bound is a store's limit and running count.
type bound struct {
	mu  sync.Mutex
	max int64
	// used is the copies' bytes, which the bound limits.
	used     int64
	reserved int64
	counted  time.Time
	// last is the latest walk of the store, at counted; the next is due
	// after every.
	last    tally
	every   time.Duration
	byUID   map[uint32]int64
	refused int64
}

// isCopy reports whether a stored object is one the daemon copied in:
// copies are its user's and mode 0400; a hard link keeps the removed
// file's owner and mode (a file of the daemon's user that was 0400 is
// counted as a copy, which only errs towards the bound).
func isCopy(st *syscall.Stat_t) bool {
	return int(st.Uid) == os.Geteuid() && st.Mode&0o7777 == privateFileMode
}

// tally is what a walk of the store counts.
type tally struct {
	bytes, copied int64
	objects       int
}

// DefaultBound is the bound of a store on a filesystem of total bytes:
// DefaultMaxPercent of it, at most DefaultMaxBytes.
func DefaultBound(total int64) int64 {
	return min(DefaultMaxBytes, total/100*DefaultMaxPercent)
}

// SetBound bounds the store at maxBytes (0: DefaultBound of its
// filesystem) and counts what it holds. It returns the bound.
func (s *Store) SetBound(maxBytes int64) (int64, error) {
	if maxBytes <= 0 {
		var fs unix.Statfs_t
		if err := unix.Statfs(s.root, &fs); err != nil {
			return 0, fmt.Errorf("object store: %w", err)
		}
		maxBytes = DefaultBound(int64(fs.Blocks) * fs.Bsize)
	}
	b := &bound{max: maxBytes, byUID: map[uint32]int64{}, every: recountEvery}
	b.recount(s)
	s.bound = b
	return maxBytes, nil
}

// count walks the store.
func (s *Store) count() tally {
	var t tally
	_ = s.Walk(func(o Object) error {
		t.bytes += o.Size
		t.objects++
		if o.copied {
			t.copied += o.Size
		}
		return nil
	})
	return t
}

// availBytes is the space the filesystem of dir, in the store, leaves
// unprivileged users: root's reserved blocks are not counted.
func availBytes(dir string) (int64, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return 0, fmt.Errorf("object store: %w", err)
	}
	return int64(fs.Bavail) * fs.Bsize, nil
}

// reserve takes room for a copy of size bytes into dir, or says why
// there is none. Every store checks the space; a bounded one also its
// bound.
func (s *Store) reserve(size int64, dir string) error {
	b := s.bound
	if b == nil {
		avail, err := availBytes(dir)
		if err != nil {
			return err
		}
		if avail < size+headroomBytes {
			return &UnavailableError{Size: size, Avail: avail}
		}
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+b.reserved+size > b.max && time.Since(b.counted) > b.every {
		b.recount(s)
	}
	if b.used+b.reserved+size > b.max {
		b.refused++
		return &UnavailableError{Size: size, Used: b.used, Max: b.max, Avail: -1}
	}
	avail, err := availBytes(dir)
	if err != nil {
		return err
	}
	if avail-b.reserved < size+headroomBytes {
		b.refused++
		return &UnavailableError{Size: size, Avail: max(0, avail-b.reserved)}
	}
	b.reserved += size
	return nil
}

// settle ends a reservation: kept says the copy is now in the store.
func (s *Store) settle(size int64, kept bool, uid uint32) {
	b := s.bound
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reserved -= size
	if kept {
		b.used += size
		b.byUID[uid] += size
	}
}

// recount walks the store, with b.mu held, to correct the running count
// (another process, intentfs gc, removes objects).
func (b *bound) recount(s *Store) {
	b.last = s.count()
	b.used = b.last.copied
	b.counted = time.Now()
}

// Usage reports the store's use against its bound: a bounded store's
// from its running count and a walk at most recountEvery old, another
// store's from a walk.
func (s *Store) Usage() Usage {
	var u Usage
	if b := s.bound; b != nil {
		b.mu.Lock()
		if time.Since(b.counted) > b.every {
			b.recount(s)
		}
		u = Usage{Bytes: b.last.bytes + max(0, b.used-b.last.copied), Objects: b.last.objects, CopiedBytes: b.used,
			MaxBytes: b.max, Refused: b.refused, CopiedByUID: map[uint32]int64{}}
		for uid, n := range b.byUID {
			u.CopiedByUID[uid] = n
		}
		b.mu.Unlock()
	} else {
		t := s.count()
		u = Usage{Bytes: t.bytes, Objects: t.objects, CopiedBytes: t.copied}
	}
	u.AvailBytes, _ = availBytes(s.root)
	return u
}
