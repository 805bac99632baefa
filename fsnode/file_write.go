package fsnode

import (
	"context"
	"io"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
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

// appendWrite writes data at the end the source file has when it is
// written, whatever offset the kernel computed (an O_APPEND write on the
// cached data path, see appendCached), as the caller, and reports the
// offset it landed at (-1 if not known). One pwritev2 with RWF_APPEND: as
// atomic against other appends to the file as an O_APPEND write. It
// writes at the descriptor's position and leaves it at the end of what it
// wrote; nothing else uses that position (reads and writes give their
// offset).
func (f *File) appendWrite(ctx context.Context, data []byte) (written uint32, at int64, errno syscall.Errno) {
	at = -1
	write := func() error {
		n, err := unix.Pwritev2(f.fd, [][]byte{data}, -1, unix.RWF_APPEND)
		if err != nil {
			return err
		}
		written = uint32(n)
		if end, err := unix.Seek(f.fd, 0, io.SeekCurrent); err == nil {
			at = end - int64(n)
		}
		return nil
	}
	var err error
	if f.node == nil {
		err = write()
	} else {
		err = f.node.root.asCaller(ctx, write)
	}
	return written, at, fs.ToErrno(err)
}
