package control

import (
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/procinfo"
)

// On the cached data path (fsnode.OpenElider) the kernel opens no file
// with OPEN, so the control files get no handle: reads and writes come
// with handle 0. What a handle would keep between the writes and reads of
// one open is kept per calling process instead, and found by its
// children too, as a descriptor they inherit would be
// (`exec 3<>.intentfs/check; printf q >&3; cat <&3`). A read answers from
// the content the caller's last GETATTR sized: the kernel reads through
// its page cache no further than that size, and content that grew since
// would be cut (see ctlFile.Getattr).

// maxHandlelessStates bounds the per-process states a control file
// keeps; past it, they start over (a command in progress is then lost,
// never applied half).
const maxHandlelessStates = 256

// maxInheritDepth bounds how far up its ancestors a process's state is
// looked for.
const maxInheritDepth = 8

// byProcess keeps one state per calling process.
type byProcess[T any] struct {
	mu sync.Mutex
	m  map[uint32]processState[T]
	// parentOf names a process's parent (procinfo.ParentPid when nil).
	parentOf func(pid uint32) (uint32, bool)
}

// processState is a state and the uid of the process that made it: only
// a process of that uid finds it.
type processState[T any] struct {
	uid   uint32
	state *T
}

// get returns the state of caller's process, or that of its nearest
// ancestor of the same uid that has one; else, if create is set, a new
// one of its own (nil otherwise).
func (b *byProcess[T]) get(caller *fuse.Caller, create bool) *T {
	var pid, uid uint32
	if caller != nil {
		pid, uid = caller.Pid, caller.Uid
	}
	b.mu.Lock()
	s, ok := b.m[pid]
	empty := len(b.m) == 0
	b.mu.Unlock()
	if ok && s.uid == uid {
		return s.state
	}
	if !ok && !empty && pid != 0 {
		if s := b.inherited(pid, uid); s != nil {
			return s
		}
	}
	if !create {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= maxHandlelessStates {
		b.m = map[uint32]processState[T]{}
	}
	st := new(T)
	b.m[pid] = processState[T]{uid: uid, state: st}
	return st
}

// inherited returns the state of pid's nearest ancestor that has one made
// by uid, if any.
func (b *byProcess[T]) inherited(pid, uid uint32) *T {
	parentOf := b.parentOf
	if parentOf == nil {
		parentOf = procinfo.ParentPid
	}
	for range maxInheritDepth {
		ppid, ok := parentOf(pid)
		if !ok || ppid <= 1 || ppid == pid {
			return nil
		}
		pid = ppid
		b.mu.Lock()
		s, found := b.m[pid]
		b.mu.Unlock()
		if found {
			if s.uid != uid {
				return nil
			}
			return s.state
		}
	}
	return nil
}
