package rawfs

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// OpendirElider wraps the raw filesystem so directories are opened
// without OPENDIR and RELEASEDIR round trips.
//
// The first OPENDIR is answered ENOSYS. A kernel that offers
// NO_OPENDIR_SUPPORT (Linux 5.1+) takes that to mean the filesystem keeps
// no directory handles: it sends no OPENDIR or RELEASEDIR again, opens
// every directory as if the reply had been FOPEN_KEEP_CACHE|FOPEN_CACHE_DIR
// (what OpendirHandle answers anyway), and sends the requests that need a
// handle with handle 0. Those are served here through a handle held for
// that request alone. A directory walk (git status, find, rm -r, go build)
// then costs two round trips fewer per directory opened. An older kernel
// would fail the open instead, so there every OPENDIR is passed on.
type OpendirElider struct {
	fuse.RawFileSystem
	elide bool // set in Init, before any request is served
}

var _ fuse.RawFileSystem = (*OpendirElider)(nil)

// ElideOpendir wraps fs.
func ElideOpendir(fs fuse.RawFileSystem) *OpendirElider {
	return &OpendirElider{RawFileSystem: fs}
}

// Init learns from the kernel's INIT whether it can open directories
// without OPENDIR.
func (e *OpendirElider) Init(server *fuse.Server) {
	e.elide = server.KernelSettings().Flags64()&fuse.CAP_NO_OPENDIR_SUPPORT != 0
	e.RawFileSystem.Init(server)
}

// OpenDir declines, once: the kernel remembers it for the connection.
func (e *OpendirElider) OpenDir(cancel <-chan struct{}, input *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if !e.elide {
		return e.RawFileSystem.OpenDir(cancel, input, out)
	}
	return fuse.ENOSYS
}

// withHandle runs call with *fh a handle of the directory hdr names: the
// kernel's, or, for handle 0, one opened for this request and released
// after it.
func (e *OpendirElider) withHandle(cancel <-chan struct{}, hdr *fuse.InHeader, fh *uint64, call func() fuse.Status) fuse.Status {
	if *fh != 0 {
		return call()
	}
	var out fuse.OpenOut
	in := fuse.OpenIn{InHeader: *hdr, Flags: syscall.O_RDONLY | syscall.O_DIRECTORY}
	if st := e.RawFileSystem.OpenDir(cancel, &in, &out); !st.Ok() {
		return st
	}
	defer e.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: *hdr, Fh: out.Fh})
	*fh = out.Fh
	return call()
}

// ReadDir lists from input.Offset (a position an earlier reply gave).
func (e *OpendirElider) ReadDir(cancel <-chan struct{}, input *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	in := *input
	return e.withHandle(cancel, &in.InHeader, &in.Fh, func() fuse.Status { return e.RawFileSystem.ReadDir(cancel, &in, out) })
}

// ReadDirPlus lists with attributes from input.Offset.
func (e *OpendirElider) ReadDirPlus(cancel <-chan struct{}, input *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	in := *input
	return e.withHandle(cancel, &in.InHeader, &in.Fh, func() fuse.Status { return e.RawFileSystem.ReadDirPlus(cancel, &in, out) })
}

// ReleaseDir has nothing to release for handle 0.
func (e *OpendirElider) ReleaseDir(input *fuse.ReleaseIn) {
	if input.Fh != 0 {
		e.RawFileSystem.ReleaseDir(input)
	}
}

// FsyncDir makes the directory durable on the source: fsync(2) of a
// directory (after a rename or create) must not become a silent no-op.
func (e *OpendirElider) FsyncDir(cancel <-chan struct{}, input *fuse.FsyncIn) fuse.Status {
	in := *input
	return e.withHandle(cancel, &in.InHeader, &in.Fh, func() fuse.Status { return e.RawFileSystem.FsyncDir(cancel, &in) })
}

// Ioctl on a directory (lsattr -d, chattr on a directory) goes to a
// handle of it; a file's ioctl always carries its own handle.
func (e *OpendirElider) Ioctl(cancel <-chan struct{}, input *fuse.IoctlIn, inbuf []byte, output *fuse.IoctlOut, outbuf []byte) fuse.Status {
	in := *input
	return e.withHandle(cancel, &in.InHeader, &in.Fh, func() fuse.Status { return e.RawFileSystem.Ioctl(cancel, &in, inbuf, output, outbuf) })
}
