// Package procinfo describes the process behind a FUSE request: pid, ids,
// comm, command line and executable, read from /proc and cached per
// (pid, start time) so a reused pid is never mistaken for its predecessor.
package procinfo

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/intentfs/intentfs/ledger"
)

// maxEntries bounds the cache; it is cleared when full, which costs only
// a few re-reads of /proc.
const maxEntries = 4096

type key struct {
	pid   uint32
	start uint64
}

// Cache looks up and remembers process descriptions.
type Cache struct {
	procRoot string

	mu      sync.Mutex
	entries map[key]*ledger.Process
}

// NewCache returns a cache reading /proc.
func NewCache() *Cache { return &Cache{procRoot: "/proc", entries: map[key]*ledger.Process{}} }

// Lookup describes pid as of now. uid and gid come from the request, which
// the kernel vouches for; the rest from /proc. A process that has already
// exited yields just the ids.
func (c *Cache) Lookup(pid, uid, gid uint32) *ledger.Process {
	base := &ledger.Process{Pid: pid, Uid: uid, Gid: gid}
	if pid == 0 {
		return base
	}
	stat, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", c.procRoot, pid))
	if err != nil {
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
