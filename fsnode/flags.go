package fsnode

import (
	"context"
	"fmt"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/policy"
)

// CodeUnsupportedFlag is the denial code of a call refused for a flag
// whose effect the daemon does not decide and record.
const CodeUnsupportedFlag policy.Code = "UNSUPPORTED_FLAG"

// modelledRenameFlags are the renameat2 flags whose effects a rename
// decides and records: RENAME_NOREPLACE (fails rather than replaces) and
// RENAME_EXCHANGE (each side receives the other's entry). Anything else
// — RENAME_WHITEOUT, which leaves a 0,0 character device at the old name
// that no record would name — is refused.
const modelledRenameFlags = policy.RenameNoReplace | policy.RenameExchange

// renameFlagsRefused reports, with a reason, flags of a rename that are
// not modelled.
func renameFlagsRefused(flags uint32) (string, bool) {
	extra := flags &^ modelledRenameFlags
	if extra == 0 {
		return "", false
	}
	what := fmt.Sprintf("flags %#x", extra)
	if extra == unix.RENAME_WHITEOUT {
		what = "RENAME_WHITEOUT"
	}
	return "renameat2 with " + what + " is refused through the mount: it would leave an entry (a whiteout device) that no ledger record names; rename without it", true
}

// refuse records req as denied with code and reason, as a policy denial
// is (logged, in the ledger, in .intentfs/denials), and returns errno.
func (r *Root) refuse(ctx context.Context, req policy.Request, code policy.Code, reason string, errno syscall.Errno) syscall.Errno {
	d := policy.Decision{Code: code, Reason: reason, Validation: policy.ValidationFail, Path: req.Path}
	_ = r.asDaemon(ctx, func() error {
		caller, _ := fuse.FromContext(ctx)
		if caller != nil {
			req.Caller = policy.Caller{Pid: caller.Pid, Uid: caller.Uid, Gid: caller.Gid}
		}
		a := r.actorOf(caller)
		req.Intent = a.Intent
		r.gov.Denied(req, d, r.gov.Process(caller), a.Session)
		return nil
	})
	return errno
}
