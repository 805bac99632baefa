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
	// Read reads a regular file of the source (at most max bytes, never
	// through a symlink, never blocking): what a rename is about to move
	// onto a ref.
	Read func(rel string, max int64) ([]byte, error)
	// Checkpoint records the pending writes of every file open for
	// writing, so the ledger holds them before a commit is judged.
	Checkpoint func()
}

// touchesGit reports whether either path of req is inside a git directory.
func touchesGit(req policy.Request) bool {
	_, _, a := policy.GitDirOf(req.Path)
	_, _, b := policy.GitDirOf(req.Path2)
	return a || b
}

// watchGit asks the Governor's GitWatcher, if it has one, about an
// allowed change inside a git directory.
func (r *Root) watchGit(ctx context.Context, caller *fuse.Caller, req policy.Request) (*policy.Decision, func()) {
	w, ok := r.gov.(GitWatcher)
	if !ok || !touchesGit(req) {
		return nil, nil
	}
	return w.WatchGit(ctx, GitChange{Req: req, Caller: caller,
		Read:       func(rel string, max int64) ([]byte, error) { return safeio.ReadFile(r.source, rel, max) },
		Checkpoint: r.checkpointWriters,
	})
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

// GitRestorer, when the Governor implements it, lets git restore
// committed content outside the active intent's scope instead of the
// scope refusing it (see internal/gitgate/outside.go): a checkout or a
// merge changes the files it moves between commits, wherever they are.
// A file git creates there is held to its content when it is closed: if
// git did not restore it, the mount undoes it and close fails.
type GitRestorer interface {
	// GitRestoring reports whether p is the real git binary running a
	// command that writes the work tree from commits.
	GitRestoring(p *ledger.Process) bool
	// GitMayChange says whether git may make the change op at rel
	// (OpCreate, OpUnlink, OpMkdir, OpRmdir) outside the scope: what
	// justifies it ("commit <id>"), or why not. hash is the content an
	// unlink removes; rewrite says that the removal is justified only if
	// git creates the file again (it moves toward other content there).
	GitMayChange(ctx context.Context, op policy.Op, rel, hash string, p *ledger.Process) (from string, rewrite bool, why string)
	// VerifyRestore says where the content git wrote at rel (sha256
	// hash) comes from, or why it is not let stay.
	VerifyRestore(ctx context.Context, rel, hash string, p *ledger.Process) (from, why string)
}

// CodeGitRestoreRefused is the denial code of a file git wrote outside
// the scope whose content restores nothing: it was undone.
const CodeGitRestoreRefused policy.Code = "GIT_RESTORE_UNVERIFIED"

// gitOutside lets git's change outside the scope through when the
// GitRestorer allows it, and returns the decision with what justifies the
// change; a created file is let through provisionally, to be checked
// when it is closed. d is the scope's denial.
func (r *Root) gitOutside(ctx context.Context, caller *fuse.Caller, req policy.Request, d policy.Decision) (policy.Decision, string, bool) {
	gr, ok := r.gov.(GitRestorer)
	if !ok || d.Path != req.Path {
		return d, "", false
	}
	switch req.Op {
	case policy.OpCreate, policy.OpUnlink, policy.OpMkdir, policy.OpRmdir:
	default:
		return d, "", false
	}
	p := r.gov.Process(caller)
	if !gr.GitRestoring(p) {
		return d, "", false
	}
	// A removal that only a rewrite justifies is let through as provisional
	// as a creation: the file must come back (see gitRemovals).
	hash := ""
	if req.Op == policy.OpUnlink {
		if dg, errno := r.digestAt(req.Path); errno == 0 {
			hash = dg.Hash
		}
	}
	from, rewrite, why := gr.GitMayChange(ctx, req.Op, req.Path, hash, p)
	if from == "" {
		d.Reason += "; as git's restore it is not let through either: " + why
		return d, "", false
	}
	return policy.Decision{Allow: true, Code: policy.CodeAllowed, Validation: policy.ValidationPass, Path: d.Path,
		Reason: "git restoring " + from + " outside the scope"}, from, req.Op == policy.OpCreate || rewrite
}
