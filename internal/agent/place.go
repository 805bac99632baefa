package agent

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/creds"
)

// nsGetParent is NS_GET_PARENT, _IO(0xb7, 0x2): a handle on the pid
// namespace that owns the one given.
const nsGetParent = 0xb702

// maxNSDepth bounds the walk up nested pid namespaces (the kernel allows
// 32 levels).
const maxNSDepth = 33

// maxPlaced bounds the placement cache; when full it starts over.
const maxPlaced = 4096

// minSweep is the size at which the placement cache first drops the
// processes that have exited. An agent's build or shell loop runs
// thousands of short processes whose pids are not reused for a long
// time: without the sweep each would hold a pidfd until the cache filled.
const minSweep = 64

// pidfdThread asks pidfd_open for a thread's own pidfd (Linux 6.9+): FUSE
// reports the calling thread's id.
const pidfdThread = unix.O_EXCL

// ErrUnplaced wraps why a process could not be placed: it is given no
// intent, so every governed change it asks for is refused.
var ErrUnplaced = errors.New("the process could not be placed in or outside a session")

// placed is a cached placement: the process behind pidfd belongs to sess
// (nil: to no session).
type placed struct {
	pidfd int
	sess  *Session
}

// placer maps pids to sessions through their pid namespaces, and caches
// the answer while the process lives: a process's own pid namespace never
// changes.
type placer struct {
	procRoot string
	// selfNS is the daemon's pid namespace: processes in it belong to no
	// session.
	selfNS uint64
	// as opens a process's namespace with the process's own ids when the
	// daemon's are not enough (see openNS).
	as *creds.Switcher

	mu    sync.Mutex
	byPid map[uint32]placed
	// sweepAt is the size of byPid at which exited processes are next
	// dropped: twice the live ones left by the last sweep, so a sweep's
	// cost is spread over as many insertions as it examines.
	sweepAt int
}

func newPlacer(procRoot string) (*placer, error) {
	var st unix.Stat_t
	if err := unix.Stat(procRoot+"/self/ns/pid", &st); err != nil {
		return nil, fmt.Errorf("reading the daemon's pid namespace: %w", err)
	}
	as, err := creds.New()
	if err != nil {
		return nil, err
	}
	return &placer{procRoot: procRoot, selfNS: st.Ino, as: as, byPid: map[uint32]placed{}, sweepAt: minSweep}, nil
}

// openNS opens pid's pid namespace. The kernel lets a process open
// another's namespaces if it may trace it (PTRACE_MODE_READ_FSCREDS):
// root may with CAP_SYS_PTRACE, which a daemon in a container usually
// lacks (Docker and podman drop it). Without it, the open is made again
// on a thread whose filesystem ids are the process's own and that has no
// effective capabilities, as its owner may: the process is placed as
// long as it is dumpable, which an agent's processes are unless they
// make themselves not, and then they are not placed and get no intent.
func (p *placer) openNS(pid uint32) (int, error) {
	path := fmt.Sprintf("%s/%d/ns/pid", p.procRoot, pid)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil || !(errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) || !p.as.Enabled() {
		return fd, err
	}
	uid, gid, idErr := effectiveIDs(p.procRoot, pid)
	if idErr != nil || uid == 0 {
		return -1, err
	}
	fd = -1
	if rerr := p.as.Run(creds.Caller{Uid: uid, Gid: gid}, func() error {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		return nil
	}); rerr != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, rerr
	}
	return fd, err
}

// effectiveIDs returns pid's effective uid and gid from the Uid and Gid
// lines of /proc/PID/status (real, effective, saved, filesystem).
func effectiveIDs(procRoot string, pid uint32) (uid, gid uint32, err error) {
	b, err := readSmall(fmt.Sprintf("%s/%d/status", procRoot, pid))
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		for key, dst := range map[string]*uint32{"Uid:": &uid, "Gid:": &gid} {
			rest, ok := strings.CutPrefix(line, key)
			if !ok {
				continue
			}
			f := strings.Fields(rest)
			if len(f) < 2 {
				return 0, 0, fmt.Errorf("malformed %s line in /proc/%d/status", key, pid)
			}
			n, err := strconv.ParseUint(f[1], 10, 32)
			if err != nil {
				return 0, 0, fmt.Errorf("malformed %s line in /proc/%d/status", key, pid)
			}
			*dst = uint32(n)
			found++
		}
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("no Uid and Gid lines in /proc/%d/status", pid)
	}
	return uid, gid, nil
}

// sweep drops the processes that have exited, with one poll(2) over all
// their pidfds. p.mu is held.
func (p *placer) sweep() {
	pids := make([]uint32, 0, len(p.byPid))
	fds := make([]unix.PollFd, 0, len(p.byPid))
	for pid, e := range p.byPid {
		pids = append(pids, pid)
		fds = append(fds, unix.PollFd{Fd: int32(e.pidfd), Events: unix.POLLIN})
	}
	if _, err := unix.Poll(fds, 0); err != nil {
		return
	}
	for i, f := range fds {
		if f.Revents != 0 {
			unix.Close(p.byPid[pids[i]].pidfd)
			delete(p.byPid, pids[i])
		}
	}
	p.sweepAt = max(minSweep, 2*len(p.byPid))
}

func openPidfd(pid uint32) (int, error) {
	fd, err := unix.PidfdOpen(int(pid), pidfdThread)
	if err != nil {
		fd, err = unix.PidfdOpen(int(pid), 0)
	}
	return fd, err
}

// alive reports whether the process behind pidfd still runs.
func alive(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 0
}

// place returns the session pid belongs to, nil for none. byNS finds a
// live or ended session by its namespace's inode; it is called with no
// lock held by the placer.
func (p *placer) place(pid uint32, byNS func(ino uint64) *Session) (*Session, error) {
	p.mu.Lock()
	c, ok := p.byPid[pid]
	p.mu.Unlock()
	if ok {
		if alive(c.pidfd) {
			return c.sess, nil
		}
		p.forget(pid, c)
	}
	pidfd, err := openPidfd(pid)
	if err != nil {
		return nil, fmt.Errorf("%w: pid %d: %v", ErrUnplaced, pid, err)
	}
	sess, err := p.walk(pid, byNS)
	// The namespace was read through /proc/PID: only if the process is
	// still alive now was it this process's and not a successor's.
	if err == nil && !alive(pidfd) {
		err = fmt.Errorf("%w: pid %d exited while it was placed", ErrUnplaced, pid)
	}
	if err != nil {
		unix.Close(pidfd)
		return nil, err
	}
	p.mu.Lock()
	if len(p.byPid) >= p.sweepAt {
		p.sweep()
	}
	if len(p.byPid) >= maxPlaced {
		for _, e := range p.byPid {
			unix.Close(e.pidfd)
		}
		clear(p.byPid)
	}
	if old, ok := p.byPid[pid]; ok {
		unix.Close(old.pidfd)
	}
	p.byPid[pid] = placed{pidfd: pidfd, sess: sess}
	p.mu.Unlock()
	return sess, nil
}

func (p *placer) forget(pid uint32, c placed) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.byPid[pid]; ok && cur.pidfd == c.pidfd {
		unix.Close(cur.pidfd)
		delete(p.byPid, pid)
	}
}

// walk finds the session whose namespace is pid's or an ancestor of it.
func (p *placer) walk(pid uint32, byNS func(uint64) *Session) (*Session, error) {
	fd, err := p.openNS(pid)
	if err != nil {
		return nil, fmt.Errorf("%w: pid %d: %v", ErrUnplaced, pid, err)
	}
	for depth := 0; ; depth++ {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%w: pid %d: %v", ErrUnplaced, pid, err)
		}
		if st.Ino == p.selfNS {
			unix.Close(fd)
			return nil, nil
		}
		if s := byNS(st.Ino); s != nil {
			unix.Close(fd)
			return s, nil
		}
		if depth == maxNSDepth {
			unix.Close(fd)
			return nil, fmt.Errorf("%w: pid %d: pid namespaces nested too deep", ErrUnplaced, pid)
		}
		parent, err := unix.IoctlRetInt(fd, nsGetParent)
		unix.Close(fd)
		if err != nil {
			// EPERM: the namespace's parent is outside the daemon's, so
			// the process lives in no namespace the daemon made or sees.
			return nil, fmt.Errorf("%w: pid %d: %v", ErrUnplaced, pid, err)
		}
		fd = parent
	}
}

// close releases every cached handle.
func (p *placer) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.byPid {
		unix.Close(e.pidfd)
	}
	clear(p.byPid)
}

// nsPid returns pid's number in its own pid namespace, from the NSpid line
// of /proc/PID/status (the last of its numbers, outermost first).
func nsPid(procRoot string, pid int) (int, error) {
	b, err := readSmall(fmt.Sprintf("%s/%d/status", procRoot, pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		return strconv.Atoi(f[len(f)-1])
	}
	return 0, fmt.Errorf("no NSpid line in /proc/%d/status", pid)
}

// readSmall reads a /proc file of at most 8 KiB.
func readSmall(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 8192)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
