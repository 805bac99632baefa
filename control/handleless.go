package control

import (
	"bytes"
	"os"
	"strconv"
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

// getOrParent returns the state of caller's process, or else that of its
// parent: a shell that writes a question through a descriptor and lets a
// child read the answer (`exec 3<>.intentfs/check; printf X >&3; cat <&3`)
// shares the file as it would share one handle. Only the parent, one
// level, is asked: the child reads what its parent could read.
func (b *byProcess[T]) getOrParent(caller *fuse.Caller) *T {
	if s := b.get(caller, false); s != nil || caller == nil {
		return s
	}
	ppid, ok := parentPID(caller.Pid)
	if !ok {
		return nil
	}
	return b.get(&fuse.Caller{Pid: ppid}, false)
}

// parentPID reads pid's parent from /proc/PID/stat: the field after the
// command name, whose closing parenthesis is the last one in the line.
func parentPID(pid uint32) (uint32, bool) {
	if pid == 0 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.ParseUint(string(f[1]), 10, 32)
	if err != nil || ppid == 0 {
		return 0, false
	}
	return uint32(ppid), true
}
