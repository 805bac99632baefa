package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/fuseuring"
)

// Transports: how the kernel's FUSE requests reach the daemon.
const (
	// TransportAuto is io_uring where the kernel offers it and it is
	// switched on, else /dev/fuse.
	TransportAuto = "auto"
	// TransportURing is FUSE over io_uring, or an error.
	TransportURing = "uring"
	// TransportDev is /dev/fuse, read and written by go-fuse.
	TransportDev = "dev"

	// DefaultTransport is what an empty Config.Transport means.
	DefaultTransport = TransportAuto
)

// server is what the daemon needs of a mounted transport.
type server interface {
	Wait()
	Unmount() error
	KernelSettings() *fuse.InitIn
}

// ParseTransport checks a --transport value.
func ParseTransport(s string) (string, error) {
	switch s {
	case "":
		return DefaultTransport, nil
	case TransportAuto, TransportURing, TransportDev:
		return s, nil
	}
	return "", fmt.Errorf("unknown transport %q: use auto, uring or dev", s)
}

// mountTransport mounts rawFS at mountpoint over the transport asked for
// and returns the server and the transport it got.
func mountTransport(want, mountpoint string, rawFS fuse.RawFileSystem, opts *fuse.MountOptions, log *slog.Logger) (server, string, error) {
	want, err := ParseTransport(want)
	if err != nil {
		return nil, "", err
	}
	auto := want == TransportAuto
	if auto {
		want = TransportDev
		if why := fuseuring.Available(); why != nil {
			log.Debug("serving /dev/fuse", "why", why)
		} else {
			want = TransportURing
		}
	}
	if want == TransportURing {
		s, err := fuseuring.Mount(mountpoint, rawFS, opts, fuseuring.Options{Log: log})
		if err != nil && auto {
			// Mount unmounted what it had mounted: /dev/fuse can
			// have the mountpoint.
			log.Warn("mounting over io_uring failed; serving /dev/fuse", "err", err)
			return mountDev(mountpoint, rawFS, opts)
		}
		if err != nil {
			return nil, "", fmt.Errorf("mounting %s over io_uring: %w", mountpoint, err)
		}
		if !s.Ring() {
			return s, TransportDev, nil
		}
		return s, TransportURing, nil
	}
	return mountDev(mountpoint, rawFS, opts)
}

// mountDev mounts rawFS at mountpoint with go-fuse's own /dev/fuse
// transport.
//
// No program the daemon starts (git) may inherit a descriptor of the
// mount: /dev/fuse would let it read and answer the mount's requests, a
// file in the mount keeps it busy at unmount. go-fuse's direct mount opens
// /dev/fuse without close-on-exec and its WaitMount opens a file in the
// mount without it; so the direct mount happens with fork held off
// (syscall.ForkLock, as for any descriptor opened without close-on-exec)
// until /dev/fuse is close-on-exec, and the poll that WaitMount would do
// is StopPolls's.
func mountDev(mountpoint string, rawFS fuse.RawFileSystem, opts *fuse.MountOptions) (server, string, error) {
	s, err := newDevServer(mountpoint, rawFS, opts)
	if err != nil {
		return nil, "", fmt.Errorf("mounting %s: %w", mountpoint, err)
	}
	go s.Serve()
	if err = fuseuring.StopPolls(mountpoint); err != nil {
		_ = s.Unmount()
		return nil, "", fmt.Errorf("mounting %s: %w", mountpoint, err)
	}
	return s, TransportDev, nil
}

// newDevServer is fuse.NewServer with the /dev/fuse descriptor
// close-on-exec before any fork can copy it.
func newDevServer(mountpoint string, rawFS fuse.RawFileSystem, opts *fuse.MountOptions) (*fuse.Server, error) {
	if !opts.DirectMount {
		// fusermount hands the descriptor over a socket, and go-fuse
		// marks it close-on-exec itself.
		return fuse.NewServer(rawFS, mountpoint, opts)
	}
	strict := *opts
	// A fallback to fusermount would fork under the lock below.
	strict.DirectMountStrict = true
	syscall.ForkLock.RLock()
	s, err := fuse.NewServer(rawFS, mountpoint, &strict)
	var cloexecErr error
	if err == nil {
		cloexecErr = closeOnExecDevFuse()
	}
	syscall.ForkLock.RUnlock()
	if cloexecErr != nil {
		// Unmount waits for the serving loop.
		go s.Serve()
		_ = s.Unmount()
		return nil, cloexecErr
	}
	if err != nil && !opts.DirectMountStrict {
		fallback := *opts
		fallback.DirectMount = false
		return fuse.NewServer(rawFS, mountpoint, &fallback)
	}
	return s, err
}

// closeOnExecDevFuse marks every /dev/fuse descriptor of this process
// close-on-exec; go-fuse does not say which one is the new mount's.
func closeOnExecDevFuse() error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing this process's descriptors: %w", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || target != "/dev/fuse" {
			continue
		}
		// EBADF: another mount's descriptor, closed meanwhile by its
		// unmount; close-on-exec on a number reused since then is
		// harmless, as the daemon hands descriptors to programs only
		// explicitly.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return fmt.Errorf("making /dev/fuse descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}
