package fsnode

import (
	"context"
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/upstreamplan"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// upstreamOutside lets a change the scope denied (d) through when it is
// the real git moving the path toward the upstream's tip (the governor
// is an upstreamplan.Source), and returns the decision with its plan;
// otherwise d, with the reason git may not either when git asked.
func (r *Root) upstreamOutside(ctx context.Context, caller *fuse.Caller, req policy.Request, d policy.Decision) (policy.Decision, *upstreamplan.Plan) {
	src, ok := r.gov.(upstreamplan.Source)
	if !ok {
		return d, nil
	}
	ws := upstreamplan.Workspace{
		Digest: func(rel string) (string, bool, error) {
			hash, exec, errno := r.regularDigestAt(rel)
			if errno != 0 {
				return "", false, errno
			}
			return hash, exec, nil
		},
		BarredWhy: r.upstreamRemovals.BarredWhy,
	}
	return upstreamplan.Outside(ctx, src, func() *ledger.Process { return r.gov.Process(caller) }, req, d, ws)
}

// regularDigestAt hashes rel if it is a regular file, and says whether
// its owner may execute it.
func (r *Root) regularDigestAt(rel string) (string, bool, syscall.Errno) {
	fd, err := withoutNoatimeOnEPERM(hashOpenFlags, func(flags int) (int, error) { return r.openBeneath(rel, flags, 0) })
	if err != nil {
		return "", false, errnoOf(err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return "", false, errnoOf(err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return "", false, syscall.EINVAL
	}
	d, err := r.hashes.HashFd(fd)
	if err != nil {
		return "", false, errnoOf(err)
	}
	return d.Hash, st.Mode&0o100 != 0, 0
}

func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return syscall.EIO
}
