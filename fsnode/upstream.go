package fsnode

import (
	"context"
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// UpstreamSource, when the Governor implements it, lets the real git bring
// the content of a human-declared upstream branch into files outside the
// active intent's scope: `git pull` of others' work changes files the agent
// may not, and that is not the agent's authorship.
//
// What git may do there is narrow, and each step is checked against the
// daemon's own copy of the upstream (fetched by the daemon, never by the
// agent, from where the policy file says):
//
//   - create a file the upstream's tip has: the bytes git writes go to an
//     unnamed file, and when git closes it the mount checks them against
//     the tip's content and, only if they are equal, publishes its own
//     copy at the path (upstreamFile). Nothing git writes is ever visible
//     at the path unverified.
//   - remove a file whose content is a version the upstream had, when the
//     tip no longer has the file; or, when the tip has other content
//     there, remove it so git can create it anew (checkout's way), put
//     back unless git's verified creation follows (upstreamRemovals).
//   - make a directory the tip has; remove an empty one it no longer has.
type UpstreamSource interface {
	// TrustedGit reports whether p is the system's git binary, which the
	// agent cannot have made.
	TrustedGit(p *ledger.Process) bool
	// UpstreamEntry says what the upstream's tip has at rel; an error
	// says why the upstream cannot be consulted (none declared, never
	// fetched, unreadable).
	UpstreamEntry(ctx context.Context, rel string) (UpstreamEntry, error)
	// UpstreamHistory says which contents rel had in the history of
	// commit, the tip an UpstreamEntry named.
	UpstreamHistory(ctx context.Context, commit, rel string) (UpstreamHistory, error)
}

// UpstreamEntry is what the upstream's tip holds at a path.
type UpstreamEntry struct {
	// Ref and Commit name the tip.
	Ref, Commit string
	// Kind is "blob", "tree", "commit" (a submodule), or "" when the tip
	// has nothing there; Mode is git's ("100644", "100755", "120000").
	Kind, Mode string
	// SHA256 is the blob's content hash, as the ledger writes it.
	SHA256 string
	Size   int64
}

// UpstreamHistory is what a path held in the upstream's history.
type UpstreamHistory struct {
	// Blobs are the content hashes of its versions.
	Blobs map[string]bool
	// WasTree says it was a directory at some point.
	WasTree bool
}

// upstreamPlan is a change outside the scope that git may make because
// it moves toward the upstream's tip.
type upstreamPlan struct {
	entry UpstreamEntry
	// rewrite says that a removal is justified only by the creation that
	// must follow it: the tip has other content there.
	rewrite bool
}

// restoredFrom is what the ledger says the change restores.
func (p *upstreamPlan) restoredFrom() string { return "commit " + p.entry.Commit }

// CodeUpstreamUnverified is the denial code of a file git wrote outside
// the scope whose bytes are not the upstream's, or of a removal there that
// git did not follow with the upstream's content.
const CodeUpstreamUnverified policy.Code = "UPSTREAM_UNVERIFIED"

// upstreamOutside lets a change the scope denied (d) through when it is
// the real git moving the path toward the upstream's tip, and returns the
// decision with its plan; otherwise d, with the reason git may not either
// when git asked.
func (r *Root) upstreamOutside(ctx context.Context, caller *fuse.Caller, req policy.Request, d policy.Decision) (policy.Decision, *upstreamPlan) {
	src, ok := r.gov.(UpstreamSource)
	if !ok || d.Path != req.Path {
		return d, nil
	}
	switch req.Op {
	case policy.OpCreate, policy.OpUnlink, policy.OpMkdir, policy.OpRmdir:
	default:
		return d, nil
	}
	p := r.gov.Process(caller)
	if p == nil || !src.TrustedGit(p) {
		return d, nil
	}
	plan, why := r.upstreamPlanFor(ctx, src, req)
	if plan == nil {
		d.Reason += "; git may bring the declared upstream's content outside the scope, but not here: " + why
		return d, nil
	}
	return policy.Decision{Allow: true, Code: policy.CodeAllowed, Validation: policy.ValidationPass, Path: d.Path,
		Reason: "git bringing " + plan.entry.Ref + " at " + shortCommit(plan.entry.Commit) + " outside the scope"}, plan
}

// upstreamPlanFor checks req against the upstream: the plan, or why not.
func (r *Root) upstreamPlanFor(ctx context.Context, src UpstreamSource, req policy.Request) (*upstreamPlan, string) {
	e, err := src.UpstreamEntry(ctx, req.Path)
	if err != nil {
		return nil, err.Error()
	}
	plan := &upstreamPlan{entry: e}
	if req.Op == policy.OpUnlink || req.Op == policy.OpRmdir {
		if why := r.upstreamRemovals.barredWhy(req.Caller.Pid); why != "" {
			return nil, why
		}
	}
	switch req.Op {
	case policy.OpMkdir:
		if e.Kind != "tree" {
			return nil, "the upstream's tip has no directory there"
		}
		return plan, ""
	case policy.OpCreate:
		if e.Kind != "blob" || (e.Mode != "100644" && e.Mode != "100755") {
			return nil, "the upstream's tip has no regular file there"
		}
		return plan, ""
	case policy.OpRmdir:
		if e.Kind != "" {
			return nil, "the upstream's tip still has it"
		}
		h, err := src.UpstreamHistory(ctx, e.Commit, req.Path)
		if err != nil {
			return nil, err.Error()
		}
		if !h.WasTree {
			return nil, "the upstream never had that directory"
		}
		return plan, ""
	}
	// OpUnlink: what is removed must be a version the upstream had, so a
	// human's local change, or a file the upstream never had, stays.
	if e.Kind != "" && e.Kind != "blob" {
		return nil, "the upstream's tip has no regular file there"
	}
	cur, exec, errno := r.regularDigestAt(req.Path)
	if errno != 0 {
		return nil, "its content could not be read (" + errno.Error() + ")"
	}
	if e.Kind == "blob" && cur == e.SHA256 && exec == (e.Mode == "100755") {
		// (git rewrites a file whose mode alone changed.)
		return nil, "it already holds the upstream's content"
	}
	h, err := src.UpstreamHistory(ctx, e.Commit, req.Path)
	if err != nil {
		return nil, err.Error()
	}
	if !h.Blobs[cur] {
		return nil, "its content is no version the upstream ever had: a local change, which a human must merge"
	}
	plan.rewrite = e.Kind == "blob"
	return plan, ""
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

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
