package fsnode

import (
	"context"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// On the cached data path the kernel keeps each file's size for long and
// learns of a change made directly in the source from the source watch, a
// few milliseconds later. For a write through a descriptor opened
// O_APPEND it computes the offset from the size it keeps: right after a
// change at the source that offset is the old end, and writing there
// would overwrite what the change added. The WRITE request carries the
// caller's open flags (WriteIn.Flags) but go-fuse's node API passes only
// the offset, so OpenElider notes which requests in flight are appends
// and the node writes those at the source file's real end, then has the
// kernel forget the size and pages it now holds wrong.

// appendWrites are the WRITE requests in flight that were made through a
// descriptor opened O_APPEND, by their cancel channel: go-fuse makes one
// for each request in flight (both transports) and gives it to the node
// as its context's Done channel, so it names the request there.
type appendWrites struct {
	mu   sync.Mutex
	reqs map[<-chan struct{}]struct{}
}

// begin notes the request with cancel channel cancel as an append until
// the returned func is called. A request without a channel is not noted:
// a channel shared by several requests could not tell them apart.
func (a *appendWrites) begin(cancel <-chan struct{}) (end func()) {
	if cancel == nil {
		return func() {}
	}
	a.mu.Lock()
	if a.reqs == nil {
		a.reqs = map[<-chan struct{}]struct{}{}
	}
	a.reqs[cancel] = struct{}{}
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		delete(a.reqs, cancel)
		a.mu.Unlock()
	}
}

// has reports whether the request ctx serves is a noted append.
func (a *appendWrites) has(ctx context.Context) bool {
	done := ctx.Done()
	if done == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.reqs[done]
	return ok
}

// appending notes in as an append while it is served, when it is one the
// node writes with no handle (the cached data path); a file with a handle
// of its own (one created before the kernel stopped sending OPEN) keeps
// the kernel's offset, as on the passthrough path.
func (e *OpenElider) appending(cancel <-chan struct{}, in *fuse.WriteIn) (end func()) {
	if !e.elide || in.Fh != 0 || in.Flags&syscall.O_APPEND == 0 {
		return func() {}
	}
	return e.root.appends.begin(cancel)
}

// Write notes an append (see appendWrites) and forwards the request.
func (e *OpenElider) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	defer e.appending(cancel, in)()
	return e.RawFileSystem.Write(cancel, in, data)
}

// Writev is Write for a request whose data came in pieces; go-fuse tries
// it before Write.
func (e *OpenElider) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	defer e.appending(cancel, in)()
	return e.RawFileSystem.Writev(cancel, in, data)
}

// appendCached writes data, an O_APPEND write the kernel placed at off,
// at the end the source file has now, through the node's writer f
// (n.cachedMu held): never at the offset the kernel computed from the
// size it keeps. Each WRITE request of one write(2) larger than a request
// lands after the one before it. Where the two differ (the file changed
// at the source since the kernel learnt its size), the kernel holds a
// size and pages that do not match the source (it put the data at its
// own offset): it is told to forget them, apart from this request, whose
// pages it holds locked until the reply.
func (n *Node) appendCached(ctx context.Context, f cachedHandle, data []byte, off int64) (uint32, syscall.Errno) {
	written, at, errno := f.appendWrite(ctx, data)
	if at != off {
		n.forgetPagesApart("dropping the kernel's size and pages of a file appended through the mount failed")
	}
	return written, errno
}
