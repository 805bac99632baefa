package procinfo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLockLines bounds a scan of /proc/locks: a process can take many
// locks, and a holder is found among the first of them or not at all.
const maxLockLines = 1 << 16

// LockHolder is a process holding a lock on a file, as /proc/locks says.
type LockHolder struct {
	Kind string // FLOCK, POSIX, OFDLCK, LEASE…
	// Pid is the holder's pid, 0 when the kernel does not name one (an
	// OFD lock belongs to an open file, not a process).
	Pid  int
	Comm string
}

// String names the holder for a person: "pid 1234 (vim), FLOCK".
func (h LockHolder) String() string {
	if h.Pid <= 0 {
		return h.Kind + " lock of an open file (the kernel names no process)"
	}
	if h.Comm == "" {
		return fmt.Sprintf("pid %d, %s lock", h.Pid, h.Kind)
	}
	return fmt.Sprintf("pid %d (%s), %s lock", h.Pid, h.Comm, h.Kind)
}

// LockHolders lists the processes holding locks on the file open as f
// (waiters are left out).
func LockHolders(f *os.File) ([]LockHolder, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("stat of %s: %w", f.Name(), err)
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return nil, fmt.Errorf("reading the lock table: %w", err)
	}
	defer locks.Close()
	hs := parseLocks(locks, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for i := range hs {
		if hs[i].Pid > 0 {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(hs[i].Pid) + "/comm")
			hs[i].Comm = strings.TrimSpace(string(b))
		}
	}
	return hs, nil
}

// parseLocks reads a /proc/locks table for the locks held on the file
// major:minor:ino. A line is "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF";
// a waiter's line has "->" after its number.
func parseLocks(r io.Reader, major, minor uint32, ino uint64) []LockHolder {
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, ino)
	var hs []LockHolder
	sc := bufio.NewScanner(r)
	for n := 0; sc.Scan() && n < maxLockLines; n++ {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] == "->" {
			continue
		}
		if f[5] != want {
			continue
		}
		pid, _ := strconv.Atoi(f[4])
		hs = append(hs, LockHolder{Kind: f[1], Pid: pid})
	}
	return hs
}
