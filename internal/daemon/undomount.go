package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// undoMountWait bounds how long a failed Start waits for the server of a
// mount it could not unmount cleanly to stop.
const undoMountWait = 10 * time.Second

// fuseConnections is where the kernel's fusectl filesystem lists the
// FUSE connections, each with an abort file.
const fuseConnections = "/sys/fs/fuse/connections"

// undoMount takes down the mount of a Start that failed after mounting.
//
// A plain unmount fails while anything holds the mount (a program forked
// meanwhile that inherited a descriptor into it, a process passing
// through), and the mount was then left behind, still served by nodes
// whose ledger and lock the failed Start goes on to close: changes made
// through it would go unrecorded. So a busy mount is detached (nobody new
// reaches it) and its connection aborted (what still holds it gets errors,
// and the server stops), before anything else is closed.
func undoMount(s server, mountpoint string, log *slog.Logger) {
	// The connection's number is the mount's device minor; read it while
	// the mount is certainly there, from what the kernel holds (no
	// request to the filesystem, which may not answer).
	var stx unix.Statx_t
	statErr := unix.Statx(unix.AT_FDCWD, mountpoint, unix.AT_STATX_DONT_SYNC|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE, &stx)
	err := s.Unmount()
	if err == nil {
		return
	}
	log.Warn("the mount of the failed start is busy: detaching it and aborting its connection", "mountpoint", mountpoint, "err", err)
	if err := unix.Unmount(mountpoint, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
		log.Error("detaching the mount of the failed start", "mountpoint", mountpoint, "err", err)
	}
	if statErr != nil {
		log.Error("reading the device of the failed start's mount", "mountpoint", mountpoint, "err", statErr)
	} else {
		if err := abortConnection(stx.Dev_minor); err != nil {
			log.Error("aborting the FUSE connection of the failed start", "mountpoint", mountpoint, "err", err)
		}
	}
	stopped := make(chan struct{})
	go func() { s.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(undoMountWait):
		log.Error("the detached mount of the failed start is still served: a process holds it", "mountpoint", mountpoint, "waited", undoMountWait)
	}
}

// abortConnection aborts FUSE connection n through fusectl.
func abortConnection(n uint32) error {
	path := fmt.Sprintf("%s/%d/abort", fuseConnections, n)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("opening %s (is fusectl mounted at %s?): %w", path, fuseConnections, err)
	}
	defer f.Close()
	if _, err := f.WriteString("1"); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
