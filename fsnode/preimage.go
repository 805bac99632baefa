package fsnode

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"

	"golang.org/x/sys/unix"
)

// Pre-image outcomes recorded in a record's pre_image field.
const (
	preImageStored = "stored"
	preImageEmpty  = "empty"
)

// CodePreimageUnavailable is the denial code of a change refused because
// the version it would destroy cannot be kept for undo (the store is at
// its bound, or the filesystem has no space for unprivileged users).
const CodePreimageUnavailable policy.Code = "PREIMAGE_UNAVAILABLE"

// preImageAt hashes the file at rel and keeps its bytes in the object
// store, before a change by uid destroys them. Bytes that cannot be kept
// are a *preImageLost error: the change is refused (see failChange).
func (r *Root) preImageAt(rel string, uid uint32) (objects.Digest, string, error) {
	fd, err := withoutNoatimeOnEPERM(hashOpenFlags, func(flags int) (int, error) { return r.openBeneath(rel, flags, 0) })
	if err != nil {
		return objects.Digest{}, "", err
	}
	defer syscall.Close(fd)
	d, err := r.hashes.HashFd(fd)
	if err != nil {
		return objects.Digest{}, "", err
	}
	kept, err := r.keep(fd, d, uid)
	if err != nil {
		return d, kept, &preImageLost{err}
	}
	return d, kept, nil
}

// keepCopy stores the version open (readable) at fd before a change
// destroys it, unless it is larger than the limit. It returns what the
// record should say. It is for versions whose change has already been
// made (a handle's checkpoint); before a change, use keep and refuse the
// change when it fails.
func (r *Root) keepCopy(fd int, d objects.Digest) string {
	kept, _ := r.keep(fd, d, objects.UnknownUID)
	return kept
}

// keep is keepCopy for a change by uid, with the reason a pre-image that
// must be kept could not be. Over --keep-max-bytes is not a failure: the
// limit is the one place undo is given up by configuration.
func (r *Root) keep(fd int, d objects.Digest, uid uint32) (string, error) {
	if r.objects == nil || d.Hash == "" {
		return "", nil
	}
	if d.Hash == ledger.EmptyHash {
		return preImageEmpty, nil
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return "failed: " + err.Error(), fmt.Errorf("object store: %w", err)
	}
	if st.Size > r.keepMax {
		return fmt.Sprintf("not kept: %d bytes is over the %d-byte limit (--keep-max-bytes); only the hash is recorded", st.Size, r.keepMax), nil
	}
	if err := r.objects.KeepFdFor(fd, d.Hash, uid); err != nil {
		r.log.Error("keeping a pre-image failed", "hash", d.Hash, "err", err)
		return "failed: " + err.Error(), err
	}
	return preImageStored, nil
}

// preImageLost is a pre-image that could not be kept: the change that
// would destroy it must not be made.
type preImageLost struct{ err error }

func (e *preImageLost) Error() string { return e.err.Error() }
func (e *preImageLost) Unwrap() error { return e.err }

// failChange answers a change whose preparation failed with err: a lost
// pre-image is refused and recorded as a denial; any other error is the
// errno it carries.
func (r *Root) failChange(ctx context.Context, req policy.Request, err error) syscall.Errno {
	var lost *preImageLost
	if !errors.As(err, &lost) {
		return fs.ToErrno(err)
	}
	errno := syscall.EACCES
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		errno = syscall.ENOSPC
	}
	reason := "the version of " + req.Path + " this change would destroy cannot be kept for undo, so the change is refused: " + lost.Error()
	return r.refuse(ctx, req, CodePreimageUnavailable, reason, errno)
}

// callerUID is the uid a change is counted against in the store.
func callerUID(ctx context.Context) uint32 {
	if caller, ok := fuse.FromContext(ctx); ok && caller != nil {
		return caller.Uid
	}
	return objects.UnknownUID
}

// keepBeforeRemoval stores the version of name in dirfd that an unlink or
// a rename over it is about to destroy. A hard link into the store costs
// nothing, but the store then holds the very inode: linkable says that no
// descriptor through the mount can write it, now or later (see
// writerGate.tryLink); otherwise the bytes are copied.
func (r *Root) keepBeforeRemoval(dirfd int, name string, fd int, st *syscall.Stat_t, d objects.Digest, linkable bool, uid uint32) (string, error) {
	if r.objects == nil || d.Hash == "" {
		return "", nil
	}
	if d.Hash == ledger.EmptyHash {
		return preImageEmpty, nil
	}
	if st.Size > r.keepMax {
		return fmt.Sprintf("not kept: %d bytes is over the %d-byte limit (--keep-max-bytes); only the hash is recorded", st.Size, r.keepMax), nil
	}
	if linkable {
		if err := r.objects.KeepLink(dirfd, name, d.Hash); err == nil {
			return preImageStored, nil
		} else if err != unix.EXDEV && err != syscall.EPERM {
			r.log.Warn("linking a pre-image failed; copying", "err", err)
		}
	}
	return r.keep(fd, d, uid)
}

// mayLinkPreImage is whether the file st describes, hashed as d, could be
// linked into the store instead of copied, were nothing writing it: a
// single link (another name would still reach the inode), a size the
// store keeps, content that is not empty.
func (r *Root) mayLinkPreImage(st *syscall.Stat_t, d objects.Digest) bool {
	return r.objects != nil && st.Nlink == 1 && st.Size > 0 && st.Size <= r.keepMax &&
		d.Hash != "" && d.Hash != ledger.EmptyHash
}

// sameVersion reports whether the file open at fd is still the version
// st described: nothing wrote it since.
func sameVersion(fd int, st *syscall.Stat_t) bool {
	var now syscall.Stat_t
	return syscall.Fstat(fd, &now) == nil && objects.VersionOf(&now) == objects.VersionOf(st)
}

// killSuidGid clears the set-user-ID bit, and the set-group-ID bit of a
// group-executable file, of the file open at fd, as the kernel does when
// an unprivileged caller writes to it. The mount asks the kernel to leave
// this to it (HANDLE_KILLPRIV_V2, which saves a getxattr round trip per
// write): passthrough writes run with the daemon's credentials, which the
// kernel would not clear the bits for.
func killSuidGid(fd int, caller *fuse.Caller) error {
	if caller == nil || caller.Uid == 0 {
		return nil
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil
	}
	if kill := setIDBitsToKill(st.Mode); kill != 0 {
		return syscall.Fchmod(fd, (st.Mode&07777)&^kill)
	}
	return nil
}

// killSuidGidOrLog is killSuidGid where the change goes ahead regardless:
// the open or SETATTR has happened and must still be recorded, so a
// failure (as root, next to impossible) is logged for the operator. The
// daemon does it, not the caller: only a file's owner may chmod it.
func (r *Root) killSuidGidOrLog(ctx context.Context, fd int, rel string) {
	caller, _ := fuse.FromContext(ctx)
	if err := r.asDaemon(ctx, func() error { return killSuidGid(fd, caller) }); err != nil {
		r.log.Error("clearing set-ID bits failed", "path", rel, "err", err)
	}
}

// setIDBitsToKill are the bits of a regular file's mode that a write or
// chown by an unprivileged caller clears: set-user-ID, and set-group-ID
// when the group may execute (without it, the bit marks mandatory
// locking, which the kernel leaves alone).
func setIDBitsToKill(mode uint32) uint32 {
	kill := uint32(0)
	if mode&syscall.S_ISUID != 0 {
		kill |= syscall.S_ISUID
	}
	if mode&syscall.S_ISGID != 0 && mode&syscall.S_IXGRP != 0 {
		kill |= syscall.S_ISGID
	}
	return kill
}

// hasSetID reports whether killSuidGid would change a file of this mode
// for caller, so the common case costs no extra syscalls.
func hasSetID(mode uint32, caller *fuse.Caller) bool {
	return caller != nil && caller.Uid != 0 && mode&syscall.S_IFMT == syscall.S_IFREG && setIDBitsToKill(mode) != 0
}

// deferredRemoval keeps a regular file that is about to be unlinked by
// linking it into the store's pending area, and returns what computes its
// pre_hash later, in the ledger writer: rm -rf of a large tree then costs
// a link per file on the caller's path instead of a full read. It returns
// a nil finish, and the caller does it all at once, when the hash is
// already cached, or when linking would not be safe (other links, a
// writable handle open or being opened) or not allowed (over the size
// limit), or when the caller says not to (mayLink false). done, never
// nil, must be called once the unlink has happened or failed: until then
// no writable open can reach the linked inode.
func (r *Root) deferredRemoval(dirfd int, name string, mayLink bool) (finish func(*ledger.Record), done func()) {
	done = func() {}
	if r.objects == nil || !mayLink {
		return nil, done
	}
	var st syscall.Stat_t
	if err := fstatat(dirfd, name, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG ||
		st.Nlink != 1 || st.Size == 0 || st.Size > r.keepMax {
		return nil, done
	}
	if _, cached := r.hashes.Cached(&st); cached {
		return nil, done
	}
	done, ok := r.writeGate.tryLink(&st)
	if !ok {
		return nil, done
	}
	pending, err := r.objects.LinkPending(dirfd, name)
	if err != nil {
		done()
		return nil, func() {}
	}
	return func(rec *ledger.Record) {
		hash, _, err := r.objects.Adopt(pending)
		g := rec.Gov()
		if err != nil {
			r.log.Error("keeping a pre-image failed", "path", rec.Path(), "err", err)
			g.PreImage = "failed: " + err.Error()
		} else {
			g.PreImage = preImageStored
		}
		if hash != "" {
			g.PreHash = &hash
		}
	}, done
}
