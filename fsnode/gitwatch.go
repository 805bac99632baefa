package fsnode

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// GitWatcher, when the Governor implements it, sees every change the
// policy allows inside a git directory before it is made, and may refuse
// it: this is how a branch update to a commit that fails `intentfs check`
// is refused, and how the objects written through the mount are known.
type GitWatcher interface {
	// WatchGit returns a denial, or nil and a function to run once the
	// change is made (nil if nothing is to be done).
	WatchGit(ctx context.Context, w GitChange) (deny *policy.Decision, after func())
}

// GitChange is one allowed change that touches a git directory.
type GitChange struct {
	Req    policy.Request
	Caller *fuse.Caller
	// Session is the agent session the caller runs in, nil outside one.
	Session *ledger.Session
	// Read reads a regular file of the source (at most max bytes, never
	// through a symlink, never blocking): what a rename is about to move
	// onto a ref.
	Read func(rel string, max int64) ([]byte, error)
	// Checkpoint records the pending writes of every file open for
	// writing, so the ledger holds them before a commit is judged.
	Checkpoint func()
	// Judged, on a rename onto a ref, takes the bytes the update was
	// judged from: once the rename is made, a new file holding them
	// replaces the renamed one, so that a handle still open on that file
	// cannot change the ref after the judgement (see replaceRef).
	Judged func(content []byte)
}

// touchesGit reports whether either path of req is inside a git directory.
func touchesGit(req policy.Request) bool {
	_, _, a := policy.GitDirOf(req.Path)
	_, _, b := policy.GitDirOf(req.Path2)
	return a || b
}

// watchGit asks the Governor's GitWatcher, if it has one, about an
// allowed change inside a git directory.
func (r *Root) watchGit(ctx context.Context, caller *fuse.Caller, sess *ledger.Session, req policy.Request) (deny *policy.Decision, after func(), judged []byte) {
	w, ok := r.gov.(GitWatcher)
	if !ok || !touchesGit(req) {
		return nil, nil, nil
	}
	deny, after = w.WatchGit(ctx, GitChange{Req: req, Caller: caller, Session: sess,
		Judged:     func(b []byte) { judged = b },
		Read:       func(rel string, max int64) ([]byte, error) { return safeio.ReadFile(r.source, rel, max) },
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
