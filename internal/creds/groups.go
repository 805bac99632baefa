package creds

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// maxStatusBytes bounds the read of /proc/PID/status (a few KiB in
// practice; the Groups line holds at most 65,536 ids).
const maxStatusBytes = 1 << 20

// ReadGroups returns the supplementary groups of process pid, from the
// Groups line of /proc/PID/status. FUSE tells the daemon a caller's uid,
// gid and pid, but not its groups.
func ReadGroups(pid uint32) ([]uint32, error) {
	f, err := os.Open("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/status")
	if err != nil {
		return nil, fmt.Errorf("groups of pid %d: %w", pid, err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n := 0
	for {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil || m == 0 {
			break
		}
		if n == len(buf) {
			if len(buf) >= maxStatusBytes {
				return nil, fmt.Errorf("groups of pid %d: /proc status larger than %d bytes", pid, maxStatusBytes)
			}
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
	return parseGroups(buf[:n])
}

// parseGroups reads the Groups line of a /proc/PID/status text.
func parseGroups(status []byte) ([]uint32, error) {
	for line := range bytes.SplitSeq(status, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("Groups:"))
		if !ok {
			continue
		}
		var gs []uint32
		for _, f := range bytes.Fields(rest) {
			g, err := strconv.ParseUint(string(f), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("bad group id %q in /proc status", f)
			}
			gs = append(gs, uint32(g))
		}
		return gs, nil
	}
	return nil, fmt.Errorf("no Groups line in /proc status")
}
