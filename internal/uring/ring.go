// Package uring is a minimal io_uring: one submission and one completion
// queue shared with the kernel through mmap, driven by raw system calls
// (no cgo, no liburing). It does what the FUSE ring transport needs and
// little more: set up a ring (optionally with 128-byte submission entries
// and 32-byte completions), queue entries, submit them and wait for
// completions in one system call, and ask the kernel which operations it
// supports.
//
// A Ring is not safe for concurrent use: one goroutine owns it.
package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Setup flags (include/uapi/linux/io_uring.h).
const (
	SetupCoopTaskrun  = 1 << 8
	SetupSQE128       = 1 << 10
	SetupCQE32        = 1 << 11
	SetupSingleIssuer = 1 << 12
	// SetupDeferTaskrun (with SetupSingleIssuer) runs the kernel's
	// completion work only when the ring's one thread waits for
	// completions, instead of interrupting it whenever work arrives.
	SetupDeferTaskrun = 1 << 13
)

const (
	featSingleMmap = 1 << 0

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	enterGetEvents      = 1 << 0
	enterRegisteredRing = 1 << 4

	registerProbe           = 8
	registerRingFds         = 20
	unregisterRingFds       = 21
	registerUseRegistered   = 1 << 31
	opSupported             = 1 << 0
	registeredRingAnyOffset = ^uint32(0)
)

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// Ring is one io_uring instance.
type Ring struct {
	// fd is the ring's descriptor, or after DropFd the index of the
	// ring among the thread's registered rings.
	fd         int
	registered bool
	flags      uint32
	ringMem    []byte // the SQ and CQ rings (one mapping: IORING_FEAT_SINGLE_MMAP)
	sqeMem     []byte

	sqHead, sqTail, sqArray *uint32
	sqMask, sqEntries       uint32
	sqeSize                 uintptr
	sqLocalTail             uint32 // entries queued here, not yet published

	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           unsafe.Pointer // the first CQE
	cqeSize        uintptr
}

// New sets up a ring with room for at least entries submissions. flags
// are Setup* flags.
func New(entries uint32, flags uint32) (*Ring, error) {
	var p params
	p.flags = flags
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd), flags: flags, sqeSize: 64, cqeSize: 16}
	if flags&SetupSQE128 != 0 {
		r.sqeSize = 128
	}
	if flags&SetupCQE32 != 0 {
		r.cqeSize = 32
	}
	if p.features&featSingleMmap == 0 {
		unix.Close(r.fd)
		return nil, errors.New("io_uring: the kernel lacks IORING_FEAT_SINGLE_MMAP (Linux 5.4+ is needed)")
	}
	size := max(uintptr(p.sqOff.array)+uintptr(p.sqEntries)*4, uintptr(p.cqOff.cqes)+uintptr(p.cqEntries)*r.cqeSize)
	var err error
	if r.ringMem, err = unix.Mmap(r.fd, offSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		unix.Close(r.fd)
		return nil, fmt.Errorf("io_uring: mapping the rings: %w", err)
	}
	if r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(uintptr(p.sqEntries)*r.sqeSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		_ = unix.Munmap(r.ringMem)
		unix.Close(r.fd)
		return nil, fmt.Errorf("io_uring: mapping the submission entries: %w", err)
	}
	at := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&r.ringMem[off])) }
	r.sqHead, r.sqTail, r.sqArray = at(p.sqOff.head), at(p.sqOff.tail), at(p.sqOff.array)
	r.sqMask, r.sqEntries = *at(p.sqOff.ringMask), *at(p.sqOff.ringEntries)
	r.sqLocalTail = atomic.LoadUint32(r.sqTail)
	r.cqHead, r.cqTail = at(p.cqOff.head), at(p.cqOff.tail)
	r.cqMask = *at(p.cqOff.ringMask)
	r.cqes = unsafe.Pointer(&r.ringMem[p.cqOff.cqes])
	return r, nil
}

// Fd is the ring's descriptor (-1 after DropFd).
func (r *Ring) Fd() int {
	if r.registered {
		return -1
	}
	return r.fd
}

// DropFd registers the ring with the calling thread
// (IORING_REGISTER_RING_FDS, Linux 5.18+) and closes its descriptor: the
// ring then takes no place in the process's descriptor table, and only
// this thread may use it, so the caller must keep its OS thread
// (runtime.LockOSThread) until Close. A process serving a FUSE mount with
// a ring per entry would otherwise spend a descriptor per entry, which
// counts against the limit its other descriptors live under. If the
// kernel cannot register rings, the ring keeps its descriptor and the
// error says why.
func (r *Ring) DropFd() error {
	if r.registered {
		return nil
	}
	// struct io_uring_rsrc_update: offset (-1: any free slot, which the
	// kernel writes back), resv, data (the descriptor).
	upd := struct {
		offset, resv uint32
		data         uint64
	}{offset: registeredRingAnyOffset, data: uint64(r.fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerRingFds, uintptr(unsafe.Pointer(&upd)), 1, 0, 0); errno != 0 {
		return fmt.Errorf("io_uring_register(RING_FDS): %w", errno)
	}
	if err := unix.Close(r.fd); err != nil {
		return fmt.Errorf("io_uring: closing the registered ring's descriptor: %w", err)
	}
	r.fd, r.registered = int(upd.offset), true
	return nil
}

// Close unmaps the ring and closes it. Operations still in flight are
// cancelled by the kernel.
func (r *Ring) Close() error {
	if r.fd < 0 {
		return nil
	}
	var closeErr error
	if r.registered {
		upd := struct {
			offset, resv uint32
			data         uint64
		}{offset: uint32(r.fd)}
		if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), unregisterRingFds|registerUseRegistered, uintptr(unsafe.Pointer(&upd)), 1, 0, 0); errno != 0 {
			closeErr = fmt.Errorf("io_uring_register(UNREGISTER_RING_FDS): %w", errno)
		}
	} else {
		closeErr = unix.Close(r.fd)
	}
	err := errors.Join(unix.Munmap(r.sqeMem), unix.Munmap(r.ringMem), closeErr)
	r.fd = -1
	return err
}

// Supports reports whether the kernel implements operation op on this
// ring (IORING_REGISTER_PROBE).
func (r *Ring) Supports(op uint8) (bool, error) {
	const nOps = 256
	// struct io_uring_probe: last_op, ops_len, resv, resv2[3], then
	// ops_len struct io_uring_probe_op {op, resv, flags u16, resv2 u32}.
	var buf [16 + nOps*8]byte
	op2 := uintptr(registerProbe)
	if r.registered {
		op2 |= registerUseRegistered
	}
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), op2, uintptr(unsafe.Pointer(&buf[0])), nOps, 0, 0); errno != 0 {
		return false, fmt.Errorf("io_uring_register(PROBE): %w", errno)
	}
	if op > buf[0] { // last_op
		return false, nil
	}
	flags := uint16(buf[16+int(op)*8+2]) | uint16(buf[16+int(op)*8+3])<<8
	return flags&opSupported != 0, nil
}
