// Package procinfo describes the process behind a FUSE request: pid, ids,
// comm, command line and executable, read from /proc and cached per
// process image.
//
// A process keeps its pid and start time across execve, so neither names
// what it runs. Each cached entry holds a pidfd, which tells when the
// process is gone (and its pid possibly reused), and the device and inode
// of the executable it was running, which /proc/PID/exe reports anew
// after every exec: a hit costs a non-blocking poll and one stat (about
// 7µs here, against 3µs for the poll alone and 25-40µs for reading
// /proc/PID/stat, which is why stat is not read on a hit). A miss reads
// /proc and keys the description by everything an exec changes: comm,
// executable, and the addresses of the image's code and stack.
//
// What the cache cannot see is an exec of the same executable file (a
// shell exec'ing itself): comm and exe are then the same as before, and
// only the cmdline of the earlier program may be reported.
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

// minSweep is the size at which the cache first drops the processes that
// have exited. A build or a shell loop runs thousands of short processes
// whose pids are not reused for a long time: without the sweep each would
// hold its two descriptors until the cache filled.
const minSweep = 64

// HandleBound bounds the descriptors the cache holds on processes (a
// pidfd and a /proc directory each) when at most maxLive processes call
// at once: exited processes are dropped when the cache reaches sweepAt,
// which a sweep sets to twice the processes still alive, and never below
// minSweep.
func HandleBound(maxLive int) int { return 2 * max(minSweep, 2*maxLive) }

// image identifies one program run by one process: a new pid, a reused
// pid (start time) or an exec (comm, exe, code and stack addresses) each
// make a different key.
type image struct {
	pid, uid, gid         uint32
	start                 uint64
	comm                  string
	startCode, startStack uint64
	exeDev, exeIno        uint64
}

// live is a cached process, the pidfd that tells when it is gone, a
// handle on its /proc directory, and the executable it was running when
// cached.
type live struct {
	pidfd int
	// procDir is an O_PATH handle on /proc/PID, opened while the process
	// was known to be this one: it stays bound to this process even if
	// the pid is reused, and reaching its exe through it spares the pid
	// lookup and the formatted path on every cache hit.
	procDir        int
	exeDev, exeIno uint64
	proc           *ledger.Process
}

func (l *live) close() {
	unix.Close(l.pidfd)
	unix.Close(l.procDir)
}

// Cache looks up and remembers process descriptions.
type Cache struct {
	procRoot string

	mu      sync.Mutex
	entries map[image]*ledger.Process
	byPid   map[uint32]*live
	// sweepAt is the size of byPid at which exited processes are next
	// dropped: twice the live ones left by the last sweep, so a sweep's
	// cost is spread over as many insertions as it examines.
	sweepAt int
}

// NewCache returns a cache reading /proc.
func NewCache() *Cache {
	return &Cache{procRoot: "/proc", entries: map[image]*ledger.Process{}, byPid: map[uint32]*live{}, sweepAt: minSweep}
}

// Close releases the handles the cache holds on processes (a pidfd and a
// /proc directory each): a daemon that unmounts within a longer-lived
// process (the tests, a supervisor) must not keep them. The cache is not
// used after.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pid, l := range c.byPid {
		l.close()
		delete(c.byPid, pid)
	}
}

// sweep drops the processes that have exited, with one poll(2) over all
// their pidfds. c.mu is held.
func (c *Cache) sweep() {
	pids := make([]uint32, 0, len(c.byPid))
	fds := make([]unix.PollFd, 0, len(c.byPid))
	for pid, l := range c.byPid {
		pids = append(pids, pid)
		fds = append(fds, unix.PollFd{Fd: int32(l.pidfd), Events: unix.POLLIN})
	}
	if _, err := unix.Poll(fds, 0); err != nil {
		return
	}
	for i, f := range fds {
		if f.Revents != 0 {
			c.byPid[pids[i]].close()
			delete(c.byPid, pids[i])
		}
	}
	c.sweepAt = max(minSweep, 2*len(c.byPid))
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

// exeID returns the device and inode of the program pid runs now.
func (c *Cache) exeID(pid uint32) (dev, ino uint64) {
	var st unix.Stat_t
	if unix.Stat(fmt.Sprintf("%s/%d/exe", c.procRoot, pid), &st) != nil {
		return 0, 0
	}
	return st.Dev, st.Ino
}

// fast returns the cached description of a process that is still the one
// cached and still runs the program it ran then, without reading /proc.
func (c *Cache) fast(pid, uid, gid uint32) *ledger.Process {
	if c.procRoot != "/proc" {
		return nil // tests with a fake /proc have no pidfds
	}
	c.mu.Lock()
	l, ok := c.byPid[pid]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	var st unix.Stat_t
	var dev, ino uint64
	if unix.Fstatat(l.procDir, "exe", &st, 0) == nil {
		dev, ino = st.Dev, st.Ino
	}
	if alive(l.pidfd) && l.proc.Uid == uid && l.proc.Gid == gid && ino != 0 && dev == l.exeDev && ino == l.exeIno {
		return l.proc
	}
	c.mu.Lock()
	if c.byPid[pid] == l {
		l.close()
		delete(c.byPid, pid)
	}
	c.mu.Unlock()
	return nil
}

// remember caches p behind a pidfd opened before /proc was read: if the
// process is gone by now, the description may belong to a successor and
// is not kept.
func (c *Cache) remember(pid uint32, pidfd int, k image, p *ledger.Process) {
	if pidfd < 0 {
		return
	}
	if k.exeIno == 0 {
		unix.Close(pidfd)
		return
	}
	procDir, err := unix.Open(fmt.Sprintf("%s/%d", c.procRoot, pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(pidfd)
		return
	}
	// Alive after the handle was opened: the pid was not reused in
	// between, so the handle is this process's.
	if !alive(pidfd) {
		unix.Close(pidfd)
		unix.Close(procDir)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byPid) >= c.sweepAt {
		c.sweep()
	}
	if len(c.byPid) >= maxEntries {
		for _, l := range c.byPid {
			l.close()
		}
		clear(c.byPid)
	}
	if old, ok := c.byPid[pid]; ok {
		old.close()
	}
	c.byPid[pid] = &live{pidfd: pidfd, procDir: procDir, exeDev: k.exeDev, exeIno: k.exeIno, proc: p}
}

// readStat reads /proc/PID/stat into buf without the allocations of
// os.ReadFile: it is read on every traced change.
func (c *Cache) readStat(pid uint32, buf []byte) ([]byte, error) {
	fd, err := unix.Open(fmt.Sprintf("%s/%d/stat", c.procRoot, pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
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
	closePidfd := func() {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
	}
	var buf [1024]byte
	raw, err := c.readStat(pid, buf[:])
	if err != nil {
		closePidfd()
		return base
	}
	st, ok := parseStat(raw)
	if !ok {
		closePidfd()
		return base
	}
	k := image{pid: pid, uid: uid, gid: gid, start: st.start, comm: st.comm, startCode: st.startCode, startStack: st.startStack}
	k.exeDev, k.exeIno = c.exeID(pid)
	exe := fmt.Sprintf("%s/%d/exe", c.procRoot, pid)
	c.mu.Lock()
	p, hit := c.entries[k]
	c.mu.Unlock()
	if hit {
		c.remember(pid, pidfd, k, p)
		return p
	}
	p = &ledger.Process{Pid: pid, Uid: uid, Gid: gid, Comm: st.comm}
	var cmd [4096]byte
	if fd, err := unix.Open(fmt.Sprintf("%s/%d/cmdline", c.procRoot, pid), unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		if n, err := unix.Read(fd, cmd[:]); err == nil {
			p.Cmdline = splitCmdline(cmd[:n])
		}
		unix.Close(fd)
	}
	var link [unix.PathMax]byte
	if n, err := unix.Readlink(exe, link[:]); err == nil {
		p.Exe = string(link[:n])
	}
	if !c.settled(pid, k, p) {
		// Read midway through an exec: not kept, or every later hit
		// would repeat the half-made description.
		closePidfd()
		return p
	}
	c.mu.Lock()
	if len(c.entries) >= maxEntries {
		clear(c.entries)
	}
	c.entries[k] = p
	c.mu.Unlock()
	c.remember(pid, pidfd, k, p)
	return p
}

// settled reports whether p, read under key k, describes one whole
// program image. execve replaces the executable, then comm, then the
// arguments and the code and stack addresses, one at a time: a
// description read across those steps (an empty command line, or a key
// that no longer matches /proc afterwards) names no program that ran.
func (c *Cache) settled(pid uint32, k image, p *ledger.Process) bool {
	if len(p.Cmdline) == 0 {
		return false
	}
	var buf [1024]byte
	raw, err := c.readStat(pid, buf[:])
	if err != nil {
		return false
	}
	st, ok := parseStat(raw)
	if !ok || st.comm != k.comm || st.start != k.start || st.startCode != k.startCode || st.startStack != k.startStack {
		return false
	}
	dev, ino := c.exeID(pid)
	return dev == k.exeDev && ino == k.exeIno
}

// stat holds the fields of /proc/PID/stat that identify a process image.
type stat struct {
	comm                         string
	start, startCode, startStack uint64
}

// parseStat extracts comm, the start time (field 22) and, where present,
// startcode and startstack (fields 26 and 28) from /proc/PID/stat. comm is
// in parentheses and may itself contain spaces and parentheses, so the
// fields after it are found from the last ')'.
func parseStat(b []byte) (stat, bool) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return stat{}, false
	}
	st := stat{comm: string(b[open+1 : closing])}
	fields := bytes.Fields(b[closing+1:])
	// fields[0] is field 3 (state); field N is fields[N-3].
	if len(fields) < 20 {
		return stat{}, false
	}
	var err error
	if st.start, err = strconv.ParseUint(string(fields[19]), 10, 64); err != nil {
		return stat{}, false
	}
	if len(fields) > 25 {
		st.startCode, _ = strconv.ParseUint(string(fields[23]), 10, 64)
		st.startStack, _ = strconv.ParseUint(string(fields[25]), 10, 64)
	}
	return st, true
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

// StartTime returns when process pid started (in clock ticks since boot,
// field 22 of /proc/PID/stat): with the pid, it names one process, not a
// later one that reuses its pid. It reports false for a process that is
// gone.
func StartTime(pid uint32) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return 0, false
	}
	st, ok := parseStat(b)
	return st.start, ok
}

// ParentPid returns the parent of process pid (field 4 of /proc/PID/stat),
// and false for a process that is gone.
func ParentPid(pid uint32) (uint32, bool) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return 0, false
	}
	return parsePpid(b)
}

// parsePpid extracts the parent pid from the content of /proc/PID/stat:
// the second field after comm, which is found from the last ')'.
func parsePpid(b []byte) (uint32, bool) {
	closing := bytes.LastIndexByte(b, ')')
	if closing < 0 {
		return 0, false
	}
	fields := bytes.Fields(b[closing+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.ParseUint(string(fields[1]), 10, 32)
	if err != nil {
		return 0, false
	}
	return uint32(ppid), true
}
