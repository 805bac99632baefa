package fsnode

import (
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/rawfs"
)

// CallerScope wraps the request handler of the mount so that OPEN and
// CREATE run, from start to end, with the caller's credentials. That
// includes what go-fuse does after the node's Open or Create returns:
// registering the passthrough backing file. The kernel keeps the
// credentials of that registration and does the file's reads and writes
// with them, so they are the caller's, not root's (root may write into
// blocks reserved for it). The daemon's own work inside these requests
// (deciding, keeping a pre-image, clearing set-ID bits) switches back to
// the daemon with asDaemon.
//
// go-fuse registers one backing file per inode, when the first handle
// opens it; handles opened while it is registered share it. The
// credentials of I/O through a handle are therefore those of the first
// process to open the file among those that have it open.
func (r *Root) CallerScope(raw fuse.RawFileSystem) fuse.RawFileSystem {
	c := r.callers
	return rawfs.CallerScope(raw, func(caller *fuse.Caller, fn func() error) error {
		return c.switcher.Run(c.of(caller), fn)
	})
}
