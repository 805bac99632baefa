package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
)

// statusBackend answers status and nothing else.
type statusBackend struct{ Backend }

func (statusBackend) Status() Status { return Status{ActiveIntent: "INT-001"} }

// logBuffer is a log destination tests can read while the server writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// starveAccept leaves the server with a connection pending and no
// descriptor to accept it with, waits until accept has failed, and
// returns the client's end and a function that frees the descriptors.
func starveAccept(t *testing.T, sock string, log *logBuffer) (net.Conn, func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 256, Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
	var fillers []int
	free := func() {
		for _, fd := range fillers {
			syscall.Close(fd)
		}
		fillers = nil
	}
	t.Cleanup(free)
	for {
		fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if errors.Is(err, syscall.EMFILE) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		fillers = append(fillers, fd)
	}
	// One descriptor for the client's socket; none left for accept.
	syscall.Close(fillers[len(fillers)-1])
	fillers = fillers[:len(fillers)-1]
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial with one descriptor free: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), "too many open files") {
		if time.Now().After(deadline) {
			t.Fatalf("accept did not fail with the descriptors exhausted; log:\n%s", log)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return conn, free
}

func listenLogged(t *testing.T) (*Server, string, *logBuffer) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	log := &logBuffer{}
	srv, err := Listen(sock, syscall.Getuid(), syscall.Getgid(), statusBackend{}, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return srv, sock, log
}

// TestServerAcceptsAgainAfterEMFILE: while the daemon is out of
// descriptors, accept fails with EMFILE; the socket must answer again
// once descriptors are free, instead of its loop ending for good.
func TestServerAcceptsAgainAfterEMFILE(t *testing.T) {
	srv, sock, log := listenLogged(t)
	defer srv.Close()
	conn, free := starveAccept(t, sock, log)
	free()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(`{"op":"status"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	var resp Response
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&resp); err != nil {
		t.Fatalf("no answer once descriptors are free again: %v", err)
	}
	if !resp.OK || resp.Status == nil || resp.Status.ActiveIntent != "INT-001" {
		t.Fatalf("answer = %+v", resp)
	}
}

// TestServerCloseEndsRetries: Close ends the accept loop while it waits
// between retries, descriptors still exhausted.
func TestServerCloseEndsRetries(t *testing.T) {
	srv, sock, log := listenLogged(t)
	starveAccept(t, sock, log)
	done := make(chan error, 1)
	go func() { done <- srv.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return while accept was being retried")
	}
}

// acceptBackend records what accept was asked, and by whom.
type acceptBackend struct {
	Backend
	got *AcceptRequest
	by  *ledger.Process
}

func (b *acceptBackend) Accept(r AcceptRequest, by *ledger.Process) ([]Accepted, error) {
	b.got, b.by = &r, by
	if r.Reason == "refuse" {
		return nil, errors.New("refused: in a session")
	}
	return []Accepted{{Path: r.Paths[0], Hash: "sha256:00"}}, nil
}

// TestServerAccept: the accept op reaches the backend with the caller the
// kernel names, and its refusal comes back as the answer's error.
func TestServerAccept(t *testing.T) {
	b := &acceptBackend{}
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	srv, err := Listen(sock, syscall.Getuid(), syscall.Getgid(), b, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tests := []struct {
		name    string
		req     Request
		wantErr string
	}{
		{"no paths", Request{Op: "accept"}, "no paths named"},
		{"accepted", Request{Op: "accept", Accept: &AcceptRequest{Paths: []string{"a.txt"}, Reason: "mine"}}, ""},
		{"refused", Request{Op: "accept", Accept: &AcceptRequest{Paths: []string{"a.txt"}, Reason: "refuse"}}, "in a session"},
	}
	for _, tt := range tests {
		resp, err := Call(context.Background(), sock, tt.req)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(resp.Accepted) != 1 || resp.Accepted[0].Path != "a.txt" {
			t.Errorf("%s: %+v, %v", tt.name, resp, err)
		}
		if b.by == nil || b.by.Uid != uint32(syscall.Getuid()) || b.by.Pid != uint32(os.Getpid()) {
			t.Errorf("%s: the caller is %+v", tt.name, b.by)
		}
	}
}

// settleBackend counts settle requests, and fails them when err is set.
type settleBackend struct {
	Backend
	calls int
	err   error
}

func (b *settleBackend) Settle() error { b.calls++; return b.err }

// TestServerSettle: the settle op reaches the backend, and a ledger that
// cannot be flushed comes back as the answer's error.
func TestServerSettle(t *testing.T) {
	b := &settleBackend{}
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	srv, err := Listen(sock, syscall.Getuid(), syscall.Getgid(), b, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if resp, err := Call(context.Background(), sock, Request{Op: "settle"}); err != nil || !resp.OK || b.calls != 1 {
		t.Fatalf("settle: %+v, %v, %d calls", resp, err, b.calls)
	}
	b.err = errors.New("ledger: disk full")
	if _, err := Call(context.Background(), sock, Request{Op: "settle"}); err == nil || !strings.Contains(err.Error(), "disk full") || b.calls != 2 {
		t.Fatalf("failed settle: %v, %d calls", err, b.calls)
	}
}

// TestListenLeavesTheProcessUmaskAlone: the umask is process-wide, and a
// daemon creates files on other goroutines while a mount starts (several
// mounts share a process in the integration tests). Listen must make its
// socket private without changing the umask even for a moment, or a file
// created meanwhile gets the socket's mode instead of its own.
func TestListenLeavesTheProcessUmaskAlone(t *testing.T) {
	dir := t.TempDir()
	umask := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(umask) })
	stop := make(chan struct{})
	wrong := make(chan string, 1)
	go func() {
		defer close(wrong)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := filepath.Join(dir, fmt.Sprintf("f%d", i))
			if err := os.WriteFile(p, nil, 0o666); err != nil {
				wrong <- err.Error()
				return
			}
			if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o644 {
				wrong <- fmt.Sprintf("%s was created with mode %v under umask 022, want 0644", p, st.Mode().Perm())
				return
			}
			os.Remove(p)
		}
	}()
	for i := 0; i < 300; i++ {
		sock := filepath.Join(dir, "ctl.sock")
		srv, err := Listen(sock, syscall.Getuid(), syscall.Getgid(), statusBackend{}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Lstat(sock)
		if err != nil || st.Mode().Perm() != 0o600 || st.Mode().Type() != os.ModeSocket {
			t.Fatalf("control socket: %v, %v; want a socket of mode 0600", st.Mode(), err)
		}
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(sock); !os.IsNotExist(err) {
			t.Fatalf("Close left the socket behind: %v", err)
		}
	}
	close(stop)
	if msg, ok := <-wrong; ok {
		t.Fatal(msg)
	}
}
