package daemon

import (
	"fmt"
	"log/slog"

	"github.com/hanwen/go-fuse/v2/fuse"

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
func mountDev(mountpoint string, rawFS fuse.RawFileSystem, opts *fuse.MountOptions) (server, string, error) {
	s, err := fuse.NewServer(rawFS, mountpoint, opts)
	if err != nil {
		return nil, "", fmt.Errorf("mounting %s: %w", mountpoint, err)
	}
	go s.Serve()
	if err = s.WaitMount(); err != nil {
		return nil, "", fmt.Errorf("mounting %s: %w", mountpoint, err)
	}
	return s, TransportDev, nil
}
