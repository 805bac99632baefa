package fsnode

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
)

// Write writes where the kernel does not pass writes through to the
// source itself: as the caller, so that blocks and limits reserved for
// root stay root's.
func (f *File) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if f.node == nil {
		return f.LoopbackFile.Write(ctx, data, off)
	}
	var written uint32
	err := f.node.root.asCaller(ctx, func() error {
		var errno syscall.Errno
		written, errno = f.LoopbackFile.Write(ctx, data, off)
		return errnoAsError(errno)
	})
	return written, fs.ToErrno(err)
}
