package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Operations used here (enum io_uring_op).
const (
	OpNop      = 0
	OpRead     = 22
	OpURingCmd = 46
)

// SQE is struct io_uring_sqe, the first 64 bytes of an entry. With
// SetupSQE128 the entry is 128 bytes and its command area (Cmd) runs
// from byte 48 to the end: see (*Ring).Cmd.
type SQE struct {
	Opcode      uint8
	Flags       uint8
	IoPrio      uint16
	Fd          int32
	Off         uint64 // for OpURingCmd: cmd_op in the low 32 bits
	Addr        uint64
	Len         uint32
	OpFlags     uint32
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	SpliceFdIn  int32
	Addr3       uint64
	pad2        uint64
}

// ErrSQFull means every submission entry is queued already.
var ErrSQFull = errors.New("io_uring: submission queue full")

// Next returns a zeroed submission entry to fill in, queued for the next
// Submit. Its memory belongs to the kernel after Submit.
func (r *Ring) Next() (*SQE, error) {
	head := atomic.LoadUint32(r.sqHead)
	if r.sqLocalTail-head >= r.sqEntries {
		return nil, ErrSQFull
	}
	idx := r.sqLocalTail & r.sqMask
	entry := r.sqeMem[uintptr(idx)*r.sqeSize : uintptr(idx+1)*r.sqeSize]
	clear(entry)
	*(*uint32)(unsafe.Add(unsafe.Pointer(r.sqArray), uintptr(idx)*4)) = idx
	r.sqLocalTail++
	return (*SQE)(unsafe.Pointer(&entry[0])), nil
}

// Cmd is the command area of a 128-byte entry (80 bytes from offset 48),
// where IORING_OP_URING_CMD carries the driver's command. It is nil on a
// ring without SetupSQE128.
func (r *Ring) Cmd(sqe *SQE) []byte {
	if r.sqeSize != 128 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(sqe), 48)), 80)
}

// Submit publishes the queued entries to the kernel and, if wait > 0,
// waits until at least wait completions are ready, in one system call.
// A signal interrupting the wait is not an error: the caller looks at the
// completion queue and waits again if it must.
func (r *Ring) Submit(wait uint32) (submitted int, err error) {
	toSubmit := r.sqLocalTail - atomic.LoadUint32(r.sqTail)
	atomic.StoreUint32(r.sqTail, r.sqLocalTail)
	var flags uintptr
	if wait > 0 {
		flags = enterGetEvents
	}
	if r.registered {
		flags |= enterRegisteredRing
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(wait), flags, 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			if toSubmit == 0 {
				return 0, nil
			}
			// Interrupted before the entries were taken: try again.
			continue
		default:
			return int(n), fmt.Errorf("io_uring_enter: %w", errno)
		}
	}
}
