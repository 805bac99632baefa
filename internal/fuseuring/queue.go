package fuseuring

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/uring"
)

// queue is one of the kernel's per-CPU queues and the entries serving it.
type queue struct {
	s   *Server
	qid uint16
	max int

	mu            sync.Mutex
	entries, idle int
	// starting counts the entries counted in entries and idle that the
	// kernel does not have yet: idle-starting are free to take a request.
	starting int
	// live are the registered entries, for the stall watch.
	live map[*entry]struct{}
	// kicks are the kicks under way (see stall.go): when each started.
	kicks  map[uint64]int64
	kickID uint64
}

// add registers one more entry and returns once the kernel has it.
func (q *queue) add() error {
	q.mu.Lock()
	q.count()
	q.mu.Unlock()
	q.s.loops.Add(1)
	return q.start()
}

// count counts one more entry, not registered yet (under q.mu).
func (q *queue) count() {
	q.entries++
	q.idle++
	q.starting++
}

// start starts the entry that add or busy counted (in the queue and in
// loops), and returns once the kernel has it; if it has not, the entry is
// uncounted.
func (q *queue) start() error {
	registered := make(chan error, 1)
	go q.serve(registered)
	if err := <-registered; err != nil {
		q.mu.Lock()
		q.entries--
		q.idle--
		q.starting--
		q.mu.Unlock()
		return err
	}
	return nil
}

// busy notes that an entry took a request; if none is left idle, the
// queue grows, so a request that blocks does not hold up the others.
func (q *queue) busy() {
	q.mu.Lock()
	q.idle--
	grow := q.idle == 0 && q.entries < q.max
	if grow {
		q.count()
	}
	q.mu.Unlock()
	if grow {
		// Counted now, while this entry still is: the transport cannot
		// be seen as stopped in between.
		q.s.loops.Add(1)
		go func() {
			if err := q.start(); err != nil && !connectionGone(err) {
				q.s.log.Warn("adding a FUSE ring entry failed", "queue", q.qid, "err", err)
			}
		}()
	}
}

func (q *queue) free() {
	q.mu.Lock()
	q.idle++
	q.mu.Unlock()
}

// connectionGone tells the errors of a connection that ended (unmount,
// abort, a daemon being killed) from real failures.
func connectionGone(err error) bool {
	return errors.Is(err, unix.ENOTCONN) || errors.Is(err, unix.ECONNABORTED) || errors.Is(err, unix.ECANCELED) || errors.Is(err, unix.ENODEV)
}

// entry is one registered ring entry: its buffers and its own ring.
type entry struct {
	// since is when the entry took the request it is answering (Unix
	// nanoseconds), 0 while it waits for one.
	since atomic.Int64
	// kicked is the since of the request the stall watch last kicked
	// the queue for (the watch's own, under the queue's lock).
	kicked int64

	mem     []byte // header, then payload, page-aligned, outside the Go heap
	hdr     []byte
	payload []byte
	iov     [2]unix.Iovec
	ring    *uring.Ring
	fd      int // /dev/fuse
}

// serve registers an entry, reports the outcome on registered, and then
// answers the requests the kernel puts in it until the connection ends.
//
// The goroutine keeps its OS thread: the kernel copies each request in
// the context of the thread that submitted the entry's command, and a
// ring with SetupSingleIssuer accepts commands from one thread only. The
// thread ends with the goroutine.
func (q *queue) serve(registered chan<- error) {
	defer q.s.loops.Done()
	runtime.LockOSThread()
	if d := q.s.registerDelay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	e, err := q.newEntry()
	if err != nil {
		registered <- err
		return
	}
	defer e.close()
	if err := e.submit(cmdRegister, 0, q.qid, 0); err != nil {
		registered <- err
		return
	}
	if c, ok := e.ring.Peek(); ok { // refused at once
		registered <- fmt.Errorf("FUSE_IO_URING_CMD_REGISTER: %w", unix.Errno(-c.Res))
		return
	}
	q.mu.Lock()
	q.live[e] = struct{}{}
	q.starting--
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.live, e)
		q.mu.Unlock()
	}()
	registered <- nil
	for {
		c, err := e.ring.Wait()
		if err != nil {
			q.s.log.Error("waiting on a FUSE ring entry failed; the entry stops", "queue", q.qid, "err", err)
			return
		}
		if c.Res < 0 {
			if err := unix.Errno(-c.Res); !connectionGone(err) {
				q.s.log.Error("a FUSE ring entry failed; it stops", "queue", q.qid, "err", err)
			}
			return
		}
		q.busy()
		e.since.Store(time.Now().UnixNano())
		q.s.answeringStarts()
		commitID := q.s.answer(e.hdr, e.payload)
		q.s.answering.Add(-1)
		e.since.Store(0)
		q.free()
		// Commit the reply and wait for the next request, in one call.
		if err := e.submit(cmdCommitAndFetch, commitID, q.qid, 1); err != nil {
			q.s.log.Error("committing a FUSE reply failed; the entry stops", "queue", q.qid, "err", err)
			return
		}
	}
}

func (q *queue) newEntry() (*entry, error) {
	ring, err := uring.New(4, uring.SetupSQE128|uring.SetupSingleIssuer|uring.SetupDeferTaskrun)
	if err != nil {
		// Before Linux 6.1; the entry works without.
		if ring, err = uring.New(4, uring.SetupSQE128); err != nil {
			return nil, err
		}
	}
	// The ring is used by this thread alone: it needs no descriptor,
	// and one per entry would count against the daemon's limit, which
	// also bounds its cached directory descriptors and open handles.
	if err := ring.DropFd(); err != nil {
		q.s.log.Debug("a FUSE ring entry keeps its io_uring descriptor", "err", err)
	}
	page := unix.Getpagesize()
	hdrLen := (headerSize + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, hdrLen+q.s.payload, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		ring.Close()
		return nil, fmt.Errorf("allocating a FUSE ring entry: %w", err)
	}
	e := &entry{mem: mem, hdr: mem[:headerSize], payload: mem[hdrLen:], ring: ring, fd: q.s.fd}
	e.iov[0] = unix.Iovec{Base: &e.hdr[0]}
	e.iov[0].SetLen(len(e.hdr))
	e.iov[1] = unix.Iovec{Base: &e.payload[0]}
	e.iov[1].SetLen(len(e.payload))
	return e, nil
}

// submit queues a FUSE ring command for this entry and submits it,
// waiting for wait completions.
func (e *entry) submit(cmd uint32, commitID uint64, qid uint16, wait uint32) error {
	sqe, err := e.ring.Next()
	if err != nil {
		return err
	}
	sqe.Opcode = uring.OpURingCmd
	sqe.Fd = int32(e.fd)
	sqe.Off = uint64(cmd)
	if cmd == cmdRegister {
		sqe.Addr = uint64(uintptr(unsafe.Pointer(&e.iov[0])))
		sqe.Len = uint32(len(e.iov))
	}
	cmdReq(e.ring.Cmd(sqe), commitID, qid)
	_, err = e.ring.Submit(wait)
	return err
}

func (e *entry) close() {
	e.ring.Close()
	_ = unix.Munmap(e.mem)
}
