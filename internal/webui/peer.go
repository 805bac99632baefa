package webui

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// peerListener accepts only connections whose other end belongs to an
// allowed uid. On a unix socket the kernel says who it is (SO_PEERCRED);
// on loopback TCP the kernel's socket table does (/proc/net/tcp names the
// owner of the connecting socket, as identd did). Anyone else on the
// machine is cut off before a byte of HTTP is read: knowing or guessing
// the token is not enough for another user's process, an agent's
// included.
type peerListener struct {
	net.Listener
	allowed map[uint32]bool
	lookup  func(net.Conn) (uint32, error)
	log     *slog.Logger
	// lastLog and quiet keep a flood of refused connections from
	// flooding the human's terminal: one line a second, with a count of
	// the rest. Accept is called from one goroutine only.
	lastLog time.Time
	quiet   int
}

// refusedLogEvery is the most often a refused connection is logged.
const refusedLogEvery = time.Second

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := l.lookup(c)
		if err == nil && l.allowed[uid] {
			return c, nil
		}
		c.Close()
		if time.Since(l.lastLog) < refusedLogEvery {
			l.quiet++
			continue
		}
		l.lastLog = time.Now()
		if err != nil {
			l.log.Warn("ui: refused a connection whose owner could not be told", "err", err, "also_refused_unlogged", l.quiet)
		} else {
			l.log.Warn("ui: refused a connection from another user", "uid", uid, "also_refused_unlogged", l.quiet)
		}
		l.quiet = 0
	}
}

// unixPeerUID asks the kernel for the uid of a unix socket's peer.
func unixPeerUID(c net.Conn) (uint32, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, errors.New("not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return cred.Uid, nil
}

// checkSocketDir refuses a unix socket's directory that others may enter
// or change: the socket's own mode is not enough, since a directory
// others can write lets them replace it.
func checkSocketDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the socket's directory: %w (create it with: mkdir -m 0700 %s)", err, dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s must be yours and private (mode 0700, now %04o, owner uid %d): others could reach or replace the socket; fix: chmod 0700 %s",
			dir, fi.Mode().Perm(), st.Uid, dir)
	}
	return nil
}

// listenUnix creates the socket at path, mode 0600, in a private
// directory.
func listenUnix(path string) (net.Listener, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := checkSocketDir(filepath.Dir(abs)); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(abs); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; choose another --socket path", abs)
		}
		// A socket left by an earlier run; the private directory is ours.
		_ = os.Remove(abs)
	}
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", abs)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", abs, err)
	}
	return ln, nil
}
