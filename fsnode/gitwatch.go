package fsnode

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/gitchange"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// watchGit asks the Governor's gitchange.Watcher, if it has one, about an
// allowed change inside a git directory.
func (r *Root) watchGit(ctx context.Context, caller *fuse.Caller, sess *ledger.Session, req policy.Request) (deny *policy.Decision, after func(), judged []byte) {
	w, ok := r.gov.(gitchange.Watcher)
	if !ok || !gitchange.Touches(req) {
		return nil, nil, nil
	}
	deny, after = w.WatchGit(ctx, gitchange.Change{Req: req, Caller: caller, Session: sess,
		Judged:     func(b []byte) { judged = b },
		Read:       r.readFile,
		Checkpoint: r.checkpointWriters,
	})
	return deny, after, judged
}
