package fuseuring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Options tunes the ring.
type Options struct {
	// EntriesPerQueue is how many entries each queue starts with (0: 2).
	EntriesPerQueue int
	// MaxEntriesPerQueue bounds the entries of a queue (0: 64). A queue
	// whose entries are all busy gets another, up to this many.
	MaxEntriesPerQueue int
	// CPUList is the kernel's list of possible CPUs, one queue each
	// ("": read /sys/devices/system/cpu/possible).
	CPUList string
	// LongWait is how long an entry answers one request before the
	// stall watch treats the request as a long wait and kicks its queue
	// (0: DefaultLongWait). See stall.go.
	LongWait time.Duration
	Log      *slog.Logger
}

// Server is a FUSE mount served over io_uring.
type Server struct {
	mountpoint string
	fs         fuse.RawFileSystem
	log        *slog.Logger
	// fuseSrv did the INIT handshake and owns a duplicate of the
	// descriptor, through which notifications are written and
	// passthrough backing files registered; it reads no requests.
	fuseSrv *fuse.Server
	ps      *fuse.ProtocolServer
	fd      int // /dev/fuse: ring commands and the requests that stay on /dev/fuse
	payload int // every entry's payload buffer: the kernel's max_payload_sz
	devBuf  int // a /dev/fuse request or reply: the largest payload and its headers

	queues []*queue
	ring   bool // the ring carries requests
	user   bool // mounted by fusermount3, which unmounts too
	loops  sync.WaitGroup
	done   chan struct{}
	// answering counts the entries answering a request now; the stall
	// watch looks only while it is above zero, and wake tells it that it
	// left zero: an idle mount costs no wakeups.
	answering atomic.Int64
	wake      chan struct{}
	// looks counts the stall watch's looks, for tests.
	looks   atomic.Uint64
	unmount sync.Mutex
	// registerDelay holds back each entry added after the mount's own
	// before it registers, for tests: a loaded machine's slow thread start.
	registerDelay atomic.Int64 // nanoseconds
}

// Mount mounts fs at mountpoint and serves it over io_uring, on a kernel
// where Available is nil. opts are the options the mount would have with
// go-fuse's own transport. As root it mounts directly; as a user, through
// fusermount3.
func Mount(mountpoint string, fs fuse.RawFileSystem, opts *fuse.MountOptions, o Options) (_ *Server, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.EntriesPerQueue <= 0 {
		o.EntriesPerQueue = 2
	}
	if o.MaxEntriesPerQueue < o.EntriesPerQueue {
		o.MaxEntriesPerQueue = max(64, o.EntriesPerQueue)
	}
	if o.CPUList == "" {
		b, err := os.ReadFile("/sys/devices/system/cpu/possible")
		if err != nil {
			return nil, fmt.Errorf("counting the ring's queues: %w", err)
		}
		o.CPUList = string(b)
	}
	nq, err := possibleCPUs(o.CPUList)
	if err != nil {
		return nil, err
	}

	mo := *opts
	if mo.MaxWrite <= 0 {
		mo.MaxWrite = 128 << 10 // go-fuse's default
	}
	mo.ExtraCapabilities |= fuse.CAP_OVER_IO_URING
	// go-fuse adopts the descriptor through /dev/fd/N and must not try
	// to mount that path itself.
	mo.DirectMount, mo.DirectMountStrict = false, false
	page := os.Getpagesize()
	maxPages := (mo.MaxWrite-1)/page + 1
	s := &Server{mountpoint: mountpoint, fs: fs, log: o.Log, done: make(chan struct{}), wake: make(chan struct{}, 1),
		payload: payloadSize(mo.MaxWrite, maxPages, page)}
	s.devBuf = s.payload + 4096

	s.user = os.Geteuid() != 0
	if s.user {
		s.fd, err = mountFusermount(mountpoint, &mo, mo.MaxWrite)
	} else {
		s.fd, err = mountDirect(mountpoint, &mo, mo.MaxWrite)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if s.user {
				_ = unmountFusermount(mountpoint)
			} else {
				_ = unix.Unmount(mountpoint, unix.MNT_DETACH)
			}
			unix.Close(s.fd)
		}
	}()
	dup, err := unix.FcntlInt(uintptr(s.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicating the /dev/fuse descriptor: %w", err)
	}
	// NewServer reads and answers INIT, then hands itself to fs.Init.
	if s.fuseSrv, err = fuse.NewServer(fs, fmt.Sprintf("/dev/fd/%d", dup), &mo); err != nil {
		return nil, fmt.Errorf("mounting %s: %w", mountpoint, err)
	}
	s.ps = fuse.NewProtocolServer(fs, &mo)
	if err = s.replayInit(); err != nil {
		return nil, err
	}
	s.loops.Add(1)
	go s.serveDev()
	go func() {
		s.loops.Wait()
		unix.Close(s.fd)
		s.fs.OnUnmount()
		close(s.done)
	}()

	if s.fuseSrv.KernelSettings().Flags64()&fuse.CAP_OVER_IO_URING == 0 {
		s.log.Warn("the kernel did not offer FUSE over io_uring at INIT; serving /dev/fuse")
		return s, s.stopPolls()
	}
	for qid := range nq {
		q := &queue{s: s, qid: uint16(qid), max: o.MaxEntriesPerQueue, live: map[*entry]struct{}{}, kicks: map[uint64]int64{}}
		s.queues = append(s.queues, q)
	}
	// The kernel holds every request until each queue has an entry.
	for _, q := range s.queues {
		for range o.EntriesPerQueue {
			if rerr := q.add(); rerr != nil {
				// A failed REGISTER sends the kernel back to
				// /dev/fuse, which is served already.
				s.log.Warn("registering a FUSE ring entry failed; serving /dev/fuse", "queue", q.qid, "err", rerr)
				return s, s.stopPolls()
			}
		}
	}
	s.ring = true
	go s.watchStalls(o.LongWait)
	if err := s.stopPolls(); err != nil {
		return nil, err
	}
	return s, nil
}

// pollHackName is a file go-fuse answers for itself in the mount's root.
const pollHackName = ".go-fuse-epoll-hack"

// stopPolls makes the kernel learn, before anyone else opens a file in
// the mount, that the filesystem does not implement POLL (StopPolls).
func (s *Server) stopPolls() error {
	return StopPolls(s.mountpoint)
}

// StopPolls polls go-fuse's magic file in the new mount at mountpoint,
// which answers ENOSYS, as go-fuse's WaitMount does, so that the kernel
// learns that the filesystem does not implement POLL before anyone else
// opens a file in it. Otherwise a Go program opening a file in the mount,
// this daemon included, registers it with epoll, the kernel sends POLL,
// and the runtime waits for the answer in epoll_ctl without giving up its
// P: with every P waiting so, no goroutine is left to answer.
//
// Unlike WaitMount it opens the file close-on-exec: a program the daemon
// starts meanwhile (git) must not inherit a descriptor into the mount,
// which would keep the mount busy for as long as that program lives.
func StopPolls(mountpoint string) error {
	fd, err := unix.Open(mountpoint+"/"+pollHackName, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("first request to the new mount %s: %w", mountpoint, err)
	}
	defer unix.Close(fd)
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
	return nil
}

// replayInit gives the ProtocolServer the INIT that go-fuse's Server
// answered, so that both parse requests for the same negotiated protocol.
// The ProtocolServer computes the same reply, which goes nowhere.
func (s *Server) replayInit() error {
	in := *s.fuseSrv.KernelSettings() // it starts with its InHeader
	const opInit = 26
	in.InHeader = fuse.InHeader{Length: uint32(unsafe.Sizeof(in)), Opcode: opInit, Unique: 1}
	out := make([]byte, 4096)
	n, st := s.ps.HandleRequest([][]byte{asBytes(&in)}, [][]byte{out})
	if !st.Ok() || n < outHeaderSize || binary.LittleEndian.Uint32(out[4:]) != 0 {
		return fmt.Errorf("replaying INIT to the ring's protocol server: %v", st)
	}
	return nil
}

func asBytes[T any](v *T) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v)) }

// Ring reports whether requests travel over io_uring (else /dev/fuse).
func (s *Server) Ring() bool { return s.ring }

// KernelSettings is the kernel's INIT request.
func (s *Server) KernelSettings() *fuse.InitIn { return s.fuseSrv.KernelSettings() }

// Wait returns once the mount is gone and every request is answered.
func (s *Server) Wait() { <-s.done }

// Unmount unmounts the filesystem and waits until the transport has
// stopped. It retries a busy mount a few times, as go-fuse does.
func (s *Server) Unmount() error {
	s.unmount.Lock()
	defer s.unmount.Unlock()
	select {
	case <-s.done:
		return nil
	default:
	}
	var err error
	delay := time.Duration(0)
	for range 5 {
		if s.user {
			if err = unmountFusermount(s.mountpoint); err == nil {
				break
			}
		} else if err = unix.Unmount(s.mountpoint, 0); err == nil || errors.Is(err, unix.EINVAL) {
			// EINVAL: not mounted any more (someone else unmounted).
			break
		}
		delay = 2*delay + 5*time.Millisecond
		time.Sleep(delay)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	s.Wait()
	return nil
}
