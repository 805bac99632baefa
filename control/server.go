package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/intentfs/intentfs/ledger"
)

// maxRequestBytes bounds one request line.
const maxRequestBytes = 64 << 10

// Server answers CLI requests on a Unix socket.
type Server struct {
	ln      *net.UnixListener
	backend Backend
	owner   int // uid allowed besides root
	log     *slog.Logger
	wg      sync.WaitGroup
	// closing is closed by Close, to end a wait between accept retries.
	closing   chan struct{}
	closeOnce sync.Once
}

// Listen creates the socket at path, mode 0600, owned by uid, and serves
// it until Close.
func Listen(path string, uid, gid int, b Backend, log *slog.Logger) (*Server, error) {
	_ = os.Remove(path) // a stale socket of a dead daemon; the lock proved it dead
	ln, err := listenPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if err := os.Chown(path, uid, gid); err != nil && os.Geteuid() == 0 {
		ln.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	s := &Server{ln: ln, backend: b, owner: uid, log: log, closing: make(chan struct{})}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// listenPrivate listens on a Unix socket at path that is mode 0600 from
// the moment it exists, without changing the process umask: the umask is
// process-wide, and while a daemon starts, other goroutines create files
// (a process may serve several mounts), which a briefly tightened umask
// would give the socket's mode. Linux takes a socket file's mode from the
// socket's inode, less the umask; fchmod sets that mode before bind. The
// file's mode is checked after bind, so a kernel that ignored the fchmod
// fails closed instead of leaving the socket open to all.
func listenPrivate(path string) (*net.UnixListener, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close() // FileListener keeps a duplicate
	if err := syscall.Fchmod(fd, 0o600); err != nil {
		return nil, fmt.Errorf("fchmod before bind: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		return nil, fmt.Errorf("bind: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil || st.Mode&0o177 != 0 {
		_ = os.Remove(path)
		if err == nil {
			err = fmt.Errorf("the socket was made with mode %04o, want at most 0600", st.Mode&0o7777)
		}
		return nil, err
	}
	if err := syscall.Listen(fd, syscall.SOMAXCONN); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("listen: %w", err)
	}
	l, err := net.FileListener(f)
	if err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	ln, ok := l.(*net.UnixListener)
	if !ok {
		l.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("listener of type %T, want a Unix socket", l)
	}
	// As for a socket net.ListenUnix made: Close removes the file.
	ln.SetUnlinkOnClose(true)
	return ln, nil
}

// Close stops accepting, removes the socket, and waits for requests in
// flight to be answered.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.closing) })
	err := s.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	s.wg.Wait()
	return err
}

// Accept fails for reasons that pass: the daemon out of descriptors
// (EMFILE, ENFILE) while an agent holds many, a connection aborted before
// it was taken. Giving up on the first such error left the mount without
// its socket for good, so status and unmount hung; the loop waits a
// little, longer each time, and tries again. Only Close ends it.
const (
	acceptRetryFirst = 5 * time.Millisecond
	acceptRetryMax   = time.Second
)

func (s *Server) serve() {
	defer s.wg.Done()
	var wait time.Duration
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if wait == 0 {
				// Logged once per run of failures, not once per retry.
				s.log.Error("control socket accept failed; retrying", "err", err)
				wait = acceptRetryFirst
			} else {
				wait = min(2*wait, acceptRetryMax)
			}
			select {
			case <-s.closing:
				return
			case <-time.After(wait):
			}
			continue
		}
		if wait != 0 {
			s.log.Info("control socket accepts again")
			wait = 0
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(c)
		}()
	}
}

// peerUID returns the uid of the process on the other end of c.
func peerUID(c *net.UnixConn) (int, *ledger.Process, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, nil, err
	}
	var cred *syscall.Ucred
	var cerr error
	raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if cerr != nil {
		return -1, nil, cerr
	}
	return int(cred.Uid), &ledger.Process{Pid: uint32(cred.Pid), Uid: cred.Uid, Gid: cred.Gid}, nil
}

func (s *Server) handle(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	uid, proc, err := peerUID(c)
	enc := json.NewEncoder(c)
	if err != nil || (uid != 0 && uid != s.owner) {
		// The file mode already keeps others out; this is defence in depth.
		_ = enc.Encode(Response{Error: "permission denied: only the user who mounted may control this mount"})
		return
	}
	br := bufio.NewReaderSize(c, 4096)
	line, err := br.ReadSlice('\n')
	if err != nil && len(line) == 0 {
		return
	}
	if len(line) > maxRequestBytes {
		_ = enc.Encode(Response{Error: "request too large"})
		return
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		_ = enc.Encode(Response{Error: "malformed request: " + err.Error()})
		return
	}
	if req.User != "" {
		proc.Comm = "intentfs (" + req.User + ")"
	}
	if req.Op == "watch" {
		s.watch(c, enc)
		return
	}
	_ = enc.Encode(s.dispatch(req, proc))
}

func (s *Server) dispatch(req Request, proc *ledger.Process) Response {
	switch req.Op {
	case "status":
		st := s.backend.Status()
		return Response{OK: true, Status: &st}
	case "denials":
		return Response{OK: true, Denials: s.backend.Denials(nil)}
	case "select":
		if err := s.backend.Select(strings.TrimSpace(req.Intent), proc); err != nil {
			return Response{Error: err.Error()}
		}
		st := s.backend.Status()
		return Response{OK: true, Status: &st}
	case "intent":
		if req.IntentOp == nil {
			return Response{Error: "intent: no command given"}
		}
		if err := s.backend.IntentOp(*req.IntentOp, proc); err != nil {
			return Response{Error: err.Error()}
		}
		st := s.backend.Status()
		return Response{OK: true, Status: &st}
	case "context":
		b, err := s.backend.Context(req.Intent, nil)
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, Context: string(b)}
	case "lesson":
		if err := s.backend.Lesson(req.Text, proc); err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true}
	case "revert":
		if req.Revert == nil {
			return Response{Error: "revert: nothing named"}
		}
		plan, n, err := s.backend.Revert(*req.Revert, proc)
		if err != nil {
			return Response{Error: err.Error(), Plan: plan, Applied: n}
		}
		return Response{OK: true, Plan: plan, Applied: n}
	case "check":
		res, err := s.backend.DryRun(req.Path, req.DryRunOp, nil)
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, DryRun: &res}
	case "session_start":
		if req.Session == nil {
			return Response{Error: "session_start: no session described"}
		}
		info, err := s.backend.StartSession(*req.Session, proc)
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, Session: &info}
	case "sessions":
		return Response{OK: true, Sessions: s.backend.Sessions()}
	case "approvals":
		pending, recent := s.backend.Approvals()
		return Response{OK: true, Pending: pending, Decisions: recent}
	case "decide":
		if req.Decide == nil {
			return Response{Error: "decide: no decision given"}
		}
		ds, err := s.backend.DecideApproval(*req.Decide, proc)
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, Decisions: ds}
	case "accept":
		if req.Accept == nil {
			return Response{Error: "accept: no paths named"}
		}
		res, err := s.backend.Accept(*req.Accept, proc)
		if err != nil {
			return Response{Error: err.Error(), Accepted: res}
		}
		return Response{OK: true, Accepted: res}
	case "settle":
		if err := s.backend.Settle(); err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true}
	case "unmount":
		if err := s.backend.Unmount(); err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true}
	}
	return Response{Error: fmt.Sprintf("unknown request %q", req.Op)}
}

// Call sends one request to the socket at path and returns the answer.
func Call(ctx context.Context, path string, req Request) (*Response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connecting to the daemon at %s: %w", path, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	b, _ := json.Marshal(req)
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("sending to the daemon: %w", err)
	}
	var resp Response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		return nil, fmt.Errorf("reading the daemon's answer: %w", err)
	}
	if !resp.OK {
		return &resp, errors.New(resp.Error)
	}
	return &resp, nil
}
