// Package procinfo describes the process behind a FUSE request: pid, ids,
// comm, command line and executable, read from /proc and cached per
// process. Each cached entry holds a pidfd: while it does not report the
// process gone, the pid is still that process, so a hit costs one
// non-blocking poll instead of reading /proc, and a reused pid is never
// mistaken for its predecessor.
package procinfo

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/ledger"
)

// maxEntries bounds the cache; it is cleared when full, which costs only
// a few re-reads of /proc.
const maxEntries = 4096

type key struct {
	pid   uint32
	start uint64
}

// live is a cached process and the pidfd that tells when it is gone.
type live struct {
	pidfd int
	proc  *ledger.Process
}

// Cache looks up and remembers process descriptions.
type Cache struct {
	procRoot string

	mu      sync.Mutex
	entries map[key]*ledger.Process
	byPid   map[uint32]*live
}

// NewCache returns a cache reading /proc.
func NewCache() *Cache {
	return &Cache{procRoot: "/proc", entries: map[key]*ledger.Process{}, byPid: map[uint32]*live{}}
}

// pidfdThread asks pidfd_open for a thread's own pidfd (Linux 6.9+): FUSE
// reports the calling thread's id.
const pidfdThread = unix.O_EXCL

func openPidfd(pid uint32) int {
	fd, err := unix.PidfdOpen(int(pid), pidfdThread)
	if err != nil {
		fd, err = unix.PidfdOpen(int(pid), 0)
	}
	if err != nil {
		return -1
	}
	return fd
}

// alive reports whether the process behind pidfd still runs.
func alive(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 0
}

// fast returns the cached description of a process that is still the one
// cached, without touching /proc.
func (c *Cache) fast(pid, uid, gid uint32) *ledger.Process {
	if c.procRoot != "/proc" {
		return nil // tests with a fake /proc have no pidfds
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.byPid[pid]
	if !ok {
		return nil
	}
	if !alive(l.pidfd) || l.proc.Uid != uid || l.proc.Gid != gid {
		unix.Close(l.pidfd)
		delete(c.byPid, pid)
		return nil
	}
	return l.proc
}

// remember caches p behind a pidfd opened before /proc was read: if the
// process is gone by now, the description may belong to a successor and
// is not kept.
func (c *Cache) remember(pid uint32, pidfd int, p *ledger.Process) {
	if pidfd < 0 {
		return
	}
	if !alive(pidfd) {
		unix.Close(pidfd)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byPid) >= maxEntries {
		for _, l := range c.byPid {
			unix.Close(l.pidfd)
		}
		clear(c.byPid)
	}
	if old, ok := c.byPid[pid]; ok {
		unix.Close(old.pidfd)
	}
	c.byPid[pid] = &live{pidfd: pidfd, proc: p}
}

// Lookup describes pid as of now. uid and gid come from the request, which
// the kernel vouches for; the rest from /proc. A process that has already
// exited yields just the ids.
func (c *Cache) Lookup(pid, uid, gid uint32) *ledger.Process {
	base := &ledger.Process{Pid: pid, Uid: uid, Gid: gid}
	if pid == 0 {
		return base
	}
	if p := c.fast(pid, uid, gid); p != nil {
		return p
	}
	pidfd := -1
	if c.procRoot == "/proc" {
		pidfd = openPidfd(pid)
	}
	stat, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", c.procRoot, pid))
	if err != nil {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		return base
	}
	comm, start, ok := parseStat(stat)
	if !ok {
		return base
	}
	k := key{pid, start}
	c.mu.Lock()
	p, hit := c.entries[k]
	c.mu.Unlock()
	if hit && p.Uid == uid && p.Gid == gid {
		c.remember(pid, pidfd, p)
		return p
	}
	p = &ledger.Process{Pid: pid, Uid: uid, Gid: gid, Comm: comm}
	if cmd, err := os.ReadFile(fmt.Sprintf("%s/%d/cmdline", c.procRoot, pid)); err == nil {
		p.Cmdline = splitCmdline(cmd)
	}
	if exe, err := os.Readlink(fmt.Sprintf("%s/%d/exe", c.procRoot, pid)); err == nil {
		p.Exe = exe
	}
	c.mu.Lock()
	if len(c.entries) >= maxEntries {
		clear(c.entries)
	}
	c.entries[k] = p
	c.mu.Unlock()
	c.remember(pid, pidfd, p)
	return p
}

// parseStat extracts comm and the start time (field 22) from
// /proc/PID/stat. comm is in parentheses and may itself contain spaces
// and parentheses, so the fields after it are found from the last ')'.
func parseStat(b []byte) (comm string, start uint64, ok bool) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return "", 0, false
	}
	comm = string(b[open+1 : closing])
	fields := bytes.Fields(b[closing+1:])
	// fields[0] is field 3 (state); start time is field 22.
	if len(fields) < 20 {
		return "", 0, false
	}
	start, err := strconv.ParseUint(string(fields[19]), 10, 64)
	return comm, start, err == nil
}

func splitCmdline(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	parts := bytes.Split(b, []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}
