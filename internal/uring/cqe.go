package uring

import (
	"sync/atomic"
	"unsafe"
)

// CQE is a completion: struct io_uring_cqe, and with SetupCQE32 the 16
// extra bytes (Big).
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
	Big      [2]uint64
}

// Peek returns the oldest completion without consuming it, if there is
// one. Call Seen to consume it.
func (r *Ring) Peek() (CQE, bool) {
	head := atomic.LoadUint32(r.cqHead)
	if head == atomic.LoadUint32(r.cqTail) {
		return CQE{}, false
	}
	p := unsafe.Add(r.cqes, uintptr(head&r.cqMask)*r.cqeSize)
	c := CQE{UserData: *(*uint64)(p), Res: *(*int32)(unsafe.Add(p, 8)), Flags: *(*uint32)(unsafe.Add(p, 12))}
	if r.cqeSize == 32 {
		c.Big = *(*[2]uint64)(unsafe.Add(p, 16))
	}
	return c, true
}

// Seen consumes the completion Peek returned.
func (r *Ring) Seen() {
	atomic.StoreUint32(r.cqHead, atomic.LoadUint32(r.cqHead)+1)
}

// Wait returns the next completion, waiting for one if none is ready.
func (r *Ring) Wait() (CQE, error) {
	for {
		if c, ok := r.Peek(); ok {
			r.Seen()
			return c, nil
		}
		if _, err := r.Submit(1); err != nil {
			return CQE{}, err
		}
	}
}
