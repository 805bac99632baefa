// Package gitchange is what the filesystem puts to the commit gate: one
// allowed change inside a git directory, before it is made, and the
// Watcher that may refuse it. It sits below both fsnode, which asks, and
// internal/gitgate, which answers, so neither imports the other.
package gitchange

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Watcher, when the filesystem's governor implements it, sees every
// change the policy allows inside a git directory before it is made, and
// may refuse it: this is how a branch update to a commit that fails
// `intentfs check` is refused, and how the objects written through the
// mount are known.
type Watcher interface {
	// WatchGit returns a denial, or nil and a function to run once the
	// change is made (nil if nothing is to be done).
	WatchGit(ctx context.Context, w Change) (deny *policy.Decision, after func())
}

// Touches reports whether either path of req is inside a git directory:
// whether a Watcher is asked about it.
func Touches(req policy.Request) bool {
	_, _, a := policy.GitDirOf(req.Path)
	_, _, b := policy.GitDirOf(req.Path2)
	return a || b
}

// Change is one allowed change that touches a git directory.
type Change struct {
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
	// cannot change the ref after the judgement (see fsnode's replaceRef).
	Judged func(content []byte)
}
