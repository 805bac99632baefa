package fsnode

import (
	"sync"
	"syscall"
)

// inodeKey names a file of the source by device and inode number.
type inodeKey struct{ dev, ino uint64 }

func keyOf(st *syscall.Stat_t) inodeKey { return inodeKey{dev: uint64(st.Dev), ino: st.Ino} }

// writerGate tells a removal whether the file it is about to destroy can
// be hard-linked into the object store as its pre-image, which is only
// safe when no descriptor through the mount can write the inode then or
// later. It counts the writable handles open on each inode, and orders
// the opening of a writable handle (from the open(2) of the source file
// until its handle is counted) against a removal's check, link and
// unlink. A node's own handle count cannot do this: a CREATE of an
// existing file registers its handle on whichever node the kernel ends
// up with, and an open may be under way on a node the removal never saw.
type writerGate struct {
	// opening is held shared by every writable open, from opening the
	// source file until its handle is counted, and exclusively by a
	// removal that links, from its check to its unlink or rename.
	opening sync.RWMutex
	mu      sync.Mutex
	open    map[inodeKey]int // guarded by mu
}

// beginOpen is called before a writable open of a source file; the
// function it returns, once the handle is counted (or the open failed).
// A removal that links holds the gate only for a few system calls.
func (g *writerGate) beginOpen() func() {
	g.opening.RLock()
	return g.opening.RUnlock
}

// opened counts a writable handle on the inode open at fd and returns
// its key, for closed.
func (g *writerGate) opened(fd int) (inodeKey, bool) {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return inodeKey{}, false
	}
	k := keyOf(&st)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		g.open = map[inodeKey]int{}
	}
	g.open[k]++
	return k, true
}

// closed uncounts a handle counted by opened.
func (g *writerGate) closed(k inodeKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open[k] <= 1 {
		delete(g.open, k)
		return
	}
	g.open[k]--
}

// tryLink reports whether the file st describes may be linked into the
// store before its removal: no writable open is under way and none is
// open on the inode. When it may, no writable open can start until the
// caller calls done, which it must do once the removal has happened (or
// failed). It never waits: a busy gate means copying the bytes instead.
func (g *writerGate) tryLink(st *syscall.Stat_t) (done func(), ok bool) {
	if !g.opening.TryLock() {
		return func() {}, false
	}
	g.mu.Lock()
	n := g.open[keyOf(st)]
	g.mu.Unlock()
	if n > 0 {
		g.opening.Unlock()
		return func() {}, false
	}
	return g.opening.Unlock, true
}
