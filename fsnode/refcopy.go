package fsnode

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"

	"golang.org/x/sys/unix"
)

// replaceRef puts a new file holding content at name in dst, in place of
// the file a rename just moved there to become a git ref. The commit gate
// judged the update from content, read before the rename; a handle the
// caller kept open on the renamed file (its lock, opened for writing)
// would otherwise write another commit id into the ref afterwards, and
// FUSE cannot tell such a handle from git's own close-then-rename (RELEASE
// comes after close returns). The new file is the caller's, made as the
// caller; the old one is left unlinked with whatever its handles write.
// Failing, the ref keeps the renamed file, which holds what was judged
// unless such a handle changes it, and the failure is logged.
func (r *Root) replaceRef(ctx context.Context, dst *Node, name, rel string, content []byte, mode uint32) {
	// git skips names starting with a dot when it reads loose refs.
	tmp := fmt.Sprintf(".%s.intentfs-%016x", name, rand.Uint64())
	errno := dst.withChild(name, func(dirfd int, name string) error {
		return r.asCaller(ctx, func() error {
			fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode&0o7777)
			if err != nil {
				return fmt.Errorf("creating %s: %w", tmp, err)
			}
			err = writeAll(fd, content)
			if err == nil {
				err = unix.Fchmod(fd, mode&0o7777)
			}
			if cerr := unix.Close(fd); err == nil {
				err = cerr
			}
			if err == nil {
				err = unix.Renameat(dirfd, tmp, dirfd, name)
			}
			if err != nil {
				_ = unix.Unlinkat(dirfd, tmp, 0)
			}
			return err
		})
	})
	if errno != 0 {
		r.log.Error("replacing a ref with the judged content failed", "path", rel, "err", errno)
		return
	}
	// The kernel knows the name by the renamed file's inode. It is told
	// once the rename's reply has released the directory: invalidating
	// an entry from within a request on its directory would deadlock.
	go dst.NotifyEntry(name)
}

// writeAll writes b to fd.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
