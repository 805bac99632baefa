package fsnode

import (
	"context"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Every open file handle of the mount is a file descriptor of the daemon.
// One agent holding thousands of read handles would exhaust the daemon's
// descriptors and starve every other user of the mount (and the ledger).
// So each uid may hold at most a share of them: past it, open and create
// fail with EMFILE for that uid alone.

// handleLimit counts the open handles held per uid.
type handleLimit struct {
	max   int // <= 0: no limit
	mu    sync.Mutex
	byUID map[uint32]int
}

// defaultHandlesPerUID is a quarter of the daemon's descriptor limit, so
// at least four users (and the daemon's own files) always fit.
func defaultHandlesPerUID() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 256
	}
	return max(64, int(min(lim.Cur, 1<<30)/4))
}

// take counts a handle for uid, reporting false if uid holds its share.
func (h *handleLimit) take(uid uint32) bool {
	if h.max <= 0 {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byUID[uid] >= h.max {
		return false
	}
	h.byUID[uid]++
	return true
}

// give returns a handle of uid.
func (h *handleLimit) give(uid uint32) {
	if h.max <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byUID[uid]--; h.byUID[uid] <= 0 {
		delete(h.byUID, uid)
	}
}

// takeHandle counts a handle for the caller of ctx.
func (r *Root) takeHandle(ctx context.Context) (uint32, syscall.Errno) {
	var uid uint32
	if c, ok := fuse.FromContext(ctx); ok {
		uid = c.Uid
	}
	if !r.handles.take(uid) {
		r.log.Warn("open refused: the uid holds its share of the daemon's file descriptors", "uid", uid, "max", r.handles.max)
		return uid, syscall.EMFILE
	}
	return uid, 0
}

// handleHolder is a handle counted in a uid's share: a File, or a handle
// built on one.
type handleHolder interface {
	heldBy(h *handleLimit, uid uint32)
}

// heldBy makes Release give the handle back to uid's share.
func (f *File) heldBy(h *handleLimit, uid uint32) { f.limit, f.uid = h, uid }
