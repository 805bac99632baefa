package fsnode

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/gitchange"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// touchesGit reports whether either path of req is inside a git directory.
func touchesGit(req policy.Request) bool {
	_, _, a := policy.GitDirOf(req.Path)
	_, _, b := policy.GitDirOf(req.Path2)
	return a || b
}

// watchGit asks the Governor's gitchange.Watcher, if it has one, about an
// allowed change inside a git directory.
func (r *Root) watchGit(ctx context.Context, caller *fuse.Caller, sess *ledger.Session, req policy.Request) (deny *policy.Decision, after func(), judged []byte) {
	w, ok := r.gov.(gitchange.Watcher)
	if !ok || !touchesGit(req) {
		return nil, nil, nil
	}
	deny, after = w.WatchGit(ctx, gitchange.Change{Req: req, Caller: caller, Session: sess,
		Judged:     func(b []byte) { judged = b },
		Read:       r.readFile,
		Checkpoint: r.checkpointWriters,
	})
	return deny, after, judged
}

// checkpointWriters records the pending writes of every file open for
// writing through the mount.
func (r *Root) checkpointWriters() {
	r.writers.mu.Lock()
	files := make([]*File, 0, len(r.writers.set))
	for f := range r.writers.set {
		files = append(files, f)
	}
	r.writers.mu.Unlock()
	for _, f := range files {
		f.checkpoint(false)
	}
}
