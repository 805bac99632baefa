package control

import (
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// On the cached data path (fsnode.OpenElider) the kernel opens no file
// with OPEN, so the control files get no handle: reads and writes come
// with handle 0. Reads then answer from the content now (a read's
// attributes expire at once and carry a new mtime, so the kernel drops
// the page cache of a control file before each read), and what a handle
// would keep between the writes and reads of one open is kept per
// calling process instead.

// maxHandlelessStates bounds the per-process states a control file
// keeps; past it, they start over (a command in progress is then lost,
// never applied half).
const maxHandlelessStates = 256

// byProcess keeps one state per calling process.
type byProcess[T any] struct {
	mu sync.Mutex
	m  map[uint32]*T
}

// get returns the state of caller's process, made if create is set (nil
// otherwise when there is none).
func (b *byProcess[T]) get(caller *fuse.Caller, create bool) *T {
	var pid uint32
	if caller != nil {
		pid = caller.Pid
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.m[pid]; s != nil || !create {
		return s
	}
	if b.m == nil || len(b.m) >= maxHandlelessStates {
		b.m = map[uint32]*T{}
	}
	s := new(T)
	b.m[pid] = s
	return s
}
