package procinfo

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// sigkillBit is SIGKILL's bit in the pending-signal masks of
// /proc/PID/status (bit n-1 for signal n).
const sigkillBit = uint64(1) << (unix.SIGKILL - 1)

// maxStatusBytes bounds what Killed reads of /proc/PID/status; the
// fields it needs come in the first kilobyte.
const maxStatusBytes = 4096

// Killed reports whether task tid (a thread id, as a FUSE request names
// its caller) will never read an answer: it is gone, a zombie, or has
// SIGKILL pending. A caller waiting in a FUSE request that is killed
// stays in the kernel until the daemon answers, with SIGKILL pending.
// The daemon normally learns of it from the kernel's FUSE_INTERRUPT, but
// the kernel does not always send one (a ring request killed between
// being handed to a ring entry and being copied out sends none), so a
// long wait asks this as well. tid 0 (a caller outside the daemon's pid
// namespace) is never reported killed.
func Killed(tid uint32) bool {
	if tid == 0 {
		return false
	}
	f, err := os.Open("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
	}
	defer f.Close()
	b := make([]byte, maxStatusBytes)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		// ESRCH: the task went between open and read.
		return errors.Is(err, unix.ESRCH)
	}
	return killedStatus(b[:n])
}

// killedStatus is Killed on the text of /proc/PID/status.
func killedStatus(b []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		val = bytes.TrimSpace(val)
		switch string(key) {
		case "State":
			// Z (zombie) and X (dead): the task has exited.
			if len(val) > 0 && (val[0] == 'Z' || val[0] == 'X') {
				return true
			}
		case "SigPnd", "ShdPnd":
			if mask, err := strconv.ParseUint(string(val), 16, 64); err == nil && mask&sigkillBit != 0 {
				return true
			}
		}
	}
	return false
}
