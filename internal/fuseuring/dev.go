package fuseuring

import (
	"encoding/binary"
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// Opcodes that arrive on /dev/fuse while the ring serves the rest, and
// that are answered at once (FORGET and BATCH_FORGET not at all).
const (
	opForget      = 2
	opInterrupt   = 36
	opBatchForget = 42
)

// serveDev reads /dev/fuse until the connection ends. With the ring up,
// only FORGET, BATCH_FORGET and INTERRUPT come this way (and the replies
// to notifications that ask for one); without it, every request does.
func (s *Server) serveDev() {
	defer s.loops.Done()
	bufs := sync.Pool{New: func() any { b := make([]byte, s.devBuf); return &b }}
	for {
		bp := bufs.Get().(*[]byte)
		buf := *bp
		n, err := unix.Read(s.fd, buf)
		switch {
		case err == nil:
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.ENOENT), errors.Is(err, unix.EAGAIN):
			// ENOENT: the request was interrupted before it was read.
			bufs.Put(bp)
			continue
		case errors.Is(err, unix.ENODEV):
			return // unmounted or aborted
		default:
			s.log.Error("reading /dev/fuse failed; the mount stops", "err", err)
			return
		}
		if n < inHeaderSize {
			s.log.Error("short request on /dev/fuse", "bytes", n)
			bufs.Put(bp)
			continue
		}
		switch binary.LittleEndian.Uint32(buf[4:]) {
		case opForget, opBatchForget, opInterrupt:
			s.serveDevRequest(buf[:n])
			bufs.Put(bp)
		default:
			// It may block (a lock wait): never in the reading loop.
			s.loops.Add(1)
			go func() {
				defer s.loops.Done()
				s.serveDevRequest(buf[:n])
				bufs.Put(bp)
			}()
		}
	}
}

// serveDevRequest answers one request read from /dev/fuse.
func (s *Server) serveDevRequest(req []byte) {
	unique := binary.LittleEndian.Uint64(req[8:])
	op := binary.LittleEndian.Uint32(req[4:])
	out := make([]byte, s.devBuf)
	n, st := s.ps.HandleRequest([][]byte{req}, [][]byte{out})
	if !st.Ok() {
		if op == opForget || op == opBatchForget {
			return
		}
		setError(out, unique, int32(st))
		n = outHeaderSize
	}
	if n == 0 {
		return // no reply wanted (FORGET, an INTERRUPT that found its request)
	}
	if _, err := unix.Write(s.fd, out[:n]); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
		// ENOENT: the request was interrupted and is gone; ENODEV:
		// the mount is.
		s.log.Warn("writing a reply to /dev/fuse failed", "opcode", op, "err", err)
	}
}
