// Package upstreamplan decides what the real git may change outside the
// active intent's scope to bring a human-declared upstream branch's
// content, and keeps the bookkeeping of the removals and creations git
// makes there. It makes no system call: the mount (fsnode) reads the
// files, makes the changes and calls it to decide.
//
// What git may do is narrow, and each step is checked against the
// daemon's own copy of the upstream (fetched by the daemon, never by the
// agent, from where the policy file says):
//
//   - create a file the upstream's tip has: the bytes git writes go to an
//     unnamed file, and when git closes it the mount checks them against
//     the tip's content and, only if they are equal, publishes its own
//     copy at the path. Nothing git writes is ever visible at the path
//     unverified.
//   - remove a file whose content is a version the upstream had, when the
//     tip no longer has the file; or, when the tip has other content
//     there, remove it so git can create it anew (checkout's way), put
//     back unless git's verified creation follows (Removals).
//   - make a directory the tip has; remove an empty one it no longer has.
package upstreamplan

import (
	"context"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Source, when the governor implements it, lets the real git bring the
// content of a human-declared upstream branch into files outside the
// active intent's scope: `git pull` of others' work changes files the
// agent may not, and that is not the agent's authorship.
type Source interface {
	// TrustedGit reports whether p is the system's git binary, which the
	// agent cannot have made.
	TrustedGit(p *ledger.Process) bool
	// UpstreamEntry says what the upstream's tip has at rel; an error
	// says why the upstream cannot be consulted (none declared, never
	// fetched, unreadable).
	UpstreamEntry(ctx context.Context, rel string) (Entry, error)
	// UpstreamHistory says which contents rel had in the history of
	// commit, the tip an UpstreamEntry named.
	UpstreamHistory(ctx context.Context, commit, rel string) (History, error)
}

// Entry is what the upstream's tip holds at a path.
type Entry struct {
	// Ref and Commit name the tip.
	Ref, Commit string
	// Kind is "blob", "tree", "commit" (a submodule), or "" when the tip
	// has nothing there; Mode is git's ("100644", "100755", "120000").
	Kind, Mode string
	// SHA256 is the blob's content hash, as the ledger writes it.
	SHA256 string
	Size   int64
}

// RegularFile says the tip has a regular file there (not a symlink or a
// submodule): the only kind git may create outside the scope.
func (e Entry) RegularFile() bool {
	return e.Kind == "blob" && (e.Mode == "100644" || e.Mode == "100755")
}

// Executable says the tip's file there is executable.
func (e Entry) Executable() bool { return e.Mode == "100755" }

// History is what a path held in the upstream's history.
type History struct {
	// Blobs are the content hashes of its versions.
	Blobs map[string]bool
	// WasTree says it was a directory at some point.
	WasTree bool
}

// Plan is a change outside the scope that git may make because it moves
// toward the upstream's tip.
type Plan struct {
	Entry Entry
	// Rewrite says that a removal is justified only by the creation that
	// must follow it: the tip has other content there.
	Rewrite bool
}

// RestoredFrom is what the ledger says the change restores.
func (p *Plan) RestoredFrom() string { return "commit " + p.Entry.Commit }

// CodeUnverified is the denial code of a file git wrote outside the scope
// whose bytes are not the upstream's, or of a removal there that git did
// not follow with the upstream's content.
const CodeUnverified policy.Code = "UPSTREAM_UNVERIFIED"

// Workspace is what a plan reads of the source and of the removals in
// progress.
type Workspace struct {
	// Digest hashes rel if it is a regular file, and says whether its
	// owner may execute it; an error says why it could not be read.
	Digest func(rel string) (hash string, exec bool, err error)
	// BarredWhy says why the git process pid may remove nothing outside
	// the scope ("" if it may): Removals.BarredWhy.
	BarredWhy func(pid uint32) string
}

// Outside lets a change the scope denied (d) through when it is the real
// git moving the path toward the upstream's tip, and returns the decision
// with its plan; otherwise d, with the reason git may not either when git
// asked. process finds the requesting process, asked only for a change
// git could be let make.
func Outside(ctx context.Context, src Source, process func() *ledger.Process, req policy.Request, d policy.Decision, ws Workspace) (policy.Decision, *Plan) {
	if d.Path != req.Path {
		return d, nil
	}
	switch req.Op {
	case policy.OpCreate, policy.OpUnlink, policy.OpMkdir, policy.OpRmdir:
	default:
		return d, nil
	}
	if proc := process(); proc == nil || !src.TrustedGit(proc) {
		return d, nil
	}
	plan, why := For(ctx, src, req, ws)
	if plan == nil {
		d.Reason += "; git may bring the declared upstream's content outside the scope, but not here: " + why
		return d, nil
	}
	return policy.Decision{Allow: true, Code: policy.CodeAllowed, Validation: policy.ValidationPass, Path: d.Path,
		Reason: "git bringing " + plan.Entry.Ref + " at " + ShortCommit(plan.Entry.Commit) + " outside the scope"}, plan
}

// For checks req against the upstream: the plan, or why not.
func For(ctx context.Context, src Source, req policy.Request, ws Workspace) (*Plan, string) {
	e, err := src.UpstreamEntry(ctx, req.Path)
	if err != nil {
		return nil, err.Error()
	}
	plan := &Plan{Entry: e}
	if req.Op == policy.OpUnlink || req.Op == policy.OpRmdir {
		if why := ws.BarredWhy(req.Caller.Pid); why != "" {
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
		if !e.RegularFile() {
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
	case policy.OpUnlink:
	default:
		return nil, "git may not " + string(req.Op) + " outside the scope"
	}
	// OpUnlink: what is removed must be a version the upstream had, so a
	// human's local change, or a file the upstream never had, stays.
	if e.Kind != "" && e.Kind != "blob" {
		return nil, "the upstream's tip has no regular file there"
	}
	cur, exec, err := ws.Digest(req.Path)
	if err != nil {
		return nil, "its content could not be read (" + err.Error() + ")"
	}
	if e.Kind == "blob" && cur == e.SHA256 && exec == e.Executable() {
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
	plan.Rewrite = e.Kind == "blob"
	return plan, ""
}

// ShortCommit is c as a reason names it.
func ShortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
