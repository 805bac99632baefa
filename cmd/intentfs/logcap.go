package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxDaemonLogBytes bounds the background daemon's log file. Past it the
// file is renamed to LOG.1 (replacing the previous one) and a new one is
// started, so the log never holds more than twice this.
const maxDaemonLogBytes = 16 << 20

// cappedLog writes the daemon's log to its stderr, which the background
// start points at the mount's log file, and rotates that file at
// maxDaemonLogBytes. The new file is put in place of stderr (dup3), so
// output written to stderr directly (a panic) lands in it too.
type cappedLog struct {
	mu   sync.Mutex
	path string
	size int64
	max  int64
}

// newCappedLog returns a writer for the daemon's log: stderr itself,
// unless stderr is a regular file, which is then rotated.
func newCappedLog(max int64) io.Writer {
	var st syscall.Stat_t
	if syscall.Fstat(2, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return os.Stderr
	}
	path, err := os.Readlink("/proc/self/fd/2")
	if err != nil {
		return os.Stderr
	}
	return &cappedLog{path: path, size: st.Size, max: max}
}

func (l *cappedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size+int64(len(p)) > l.max {
		l.rotate()
	}
	n, err := os.Stderr.Write(p)
	l.size += int64(n)
	return n, err
}

// rotate moves the full log aside and starts a new one on fd 2. If that
// fails, the old file is cut to nothing rather than grow without bound.
func (l *cappedLog) rotate() {
	l.size = 0
	if err := os.Rename(l.path, l.path+".1"); err == nil {
		f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			err = unix.Dup3(int(f.Fd()), 2, 0)
			f.Close()
			if err == nil {
				fmt.Fprintf(os.Stderr, "log continued from %s.1\n", l.path)
				return
			}
		}
	}
	_ = syscall.Ftruncate(2, 0)
	fmt.Fprintf(os.Stderr, "log cut at %d bytes\n", l.max)
}
