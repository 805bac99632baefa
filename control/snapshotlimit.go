package control

import (
	"sync"
	"syscall"
)

// Each open of a control file holds a snapshot of its content until it is
// released (a reader sees one consistent file). An agent holding
// thousands of opens of a large file (.intentfs/denials) would make the
// daemon hold thousands of copies; so each uid may hold at most
// maxSnapshotHandles control handles and maxSnapshotBytes of snapshots.
// Past either, its opens fail with EMFILE, for that uid alone.
const (
	maxSnapshotHandles = 256
	maxSnapshotBytes   = 32 << 20
)

// snapshotLimit counts the control handles and snapshot bytes each uid
// holds.
type snapshotLimit struct {
	mu    sync.Mutex
	byUID map[uint32]snapshotShare
}

type snapshotShare struct {
	handles int
	bytes   int64
}

// take counts a handle holding size bytes for uid and returns the
// function that gives it back, or EMFILE when uid holds its share.
func (l *snapshotLimit) take(uid uint32, size int) (func(), syscall.Errno) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.byUID[uid]
	if s.handles >= maxSnapshotHandles || s.bytes+int64(size) > maxSnapshotBytes {
		return nil, syscall.EMFILE
	}
	if l.byUID == nil {
		l.byUID = map[uint32]snapshotShare{}
	}
	l.byUID[uid] = snapshotShare{handles: s.handles + 1, bytes: s.bytes + int64(size)}
	var once sync.Once
	return func() { once.Do(func() { l.give(uid, size) }) }, 0
}

func (l *snapshotLimit) give(uid uint32, size int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.byUID[uid]
	s.handles--
	s.bytes -= int64(size)
	if s.handles <= 0 {
		delete(l.byUID, uid)
		return
	}
	l.byUID[uid] = s
}
