package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/intentfs/intentfs/internal/gitgate"
	"github.com/intentfs/intentfs/internal/upstream"
	"github.com/intentfs/intentfs/internal/upstreamplan"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// upstreamSource answers the filesystem's questions about the declared
// upstream (upstreamplan.Source) from the daemon's private mirror of
// it, configured as the policy in force says.
type upstreamSource struct {
	mirror *upstream.Mirror
	engine *policy.Engine
}

var _ upstreamplan.Source = (*upstreamSource)(nil)

// upstreamWait bounds how long a change git makes outside the scope
// waits for the daemon's fetch of the upstream in progress: git pull
// fetches, then writes the work tree at once, and the daemon's own fetch
// starts when the agent's has written FETCH_HEAD.
const upstreamWait = 20 * time.Second

// TrustedGit reports whether p is the system's git binary.
func (u *upstreamSource) TrustedGit(p *ledger.Process) bool {
	return p != nil && gitgate.TrustedGit(p.Exe)
}

// configured is the upstream mirror, configured as the policy in force
// says (the policy file is reloaded when it changes).
func (u *upstreamSource) configured() *upstream.Mirror {
	var declared *policy.Upstream
	if snap := u.engine.Snapshot(); snap != nil && snap.Intents != nil {
		declared = snap.Intents.Upstream
	}
	u.mirror.Configure(declared)
	return u.mirror
}

// upstreamReadTimeout bounds one reading of the mirror (a tree entry, a
// path's history).
const upstreamReadTimeout = 30 * time.Second

// upstreamContext is the context of the mirror's answers to a request:
// not the request's own, which a signal to the caller cancels (git's
// progress display sends itself SIGALRM every second), and which would
// turn a wait for the upstream into a refusal; bounded instead.
func upstreamContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// UpstreamEntry says what the declared upstream's tip has at rel.
func (u *upstreamSource) UpstreamEntry(ctx context.Context, rel string) (upstreamplan.Entry, error) {
	ctx, cancel := upstreamContext(ctx, upstreamWait+upstreamReadTimeout)
	defer cancel()
	m := u.configured()
	tip, err := m.Tip(ctx, upstreamWait)
	if errors.Is(err, upstream.ErrNotConfigured) {
		return upstreamplan.Entry{}, fmt.Errorf("no upstream is declared (a human adds `upstream:` with the url and ref of the shared branch to %s)", policy.IntentsFile)
	}
	if err != nil {
		return upstreamplan.Entry{}, fmt.Errorf("the declared upstream is not available: %w", err)
	}
	e, err := m.Entry(ctx, tip, rel)
	if err != nil {
		return upstreamplan.Entry{}, fmt.Errorf("reading the upstream's %s at %s: %w", tip.Ref, tip.Commit, err)
	}
	return upstreamplan.Entry{Ref: tip.Ref, Commit: tip.Commit, Kind: e.Kind, Mode: e.Mode, SHA256: e.SHA256, Size: e.Size}, nil
}

// UpstreamHistory says which contents rel had in the upstream's history.
func (u *upstreamSource) UpstreamHistory(ctx context.Context, commit, rel string) (upstreamplan.History, error) {
	ctx, cancel := upstreamContext(ctx, upstreamReadTimeout)
	defer cancel()
	h, err := u.mirror.Versions(ctx, upstream.Tip{Commit: commit}, rel)
	if err != nil {
		return upstreamplan.History{}, fmt.Errorf("reading the upstream's history of %s: %w", rel, err)
	}
	return upstreamplan.History{Blobs: h.Blobs, WasTree: h.WasTree}, nil
}

// fetchedInMount starts a refresh of the mirror when the agent's git has
// fetched (FETCH_HEAD, a remote-tracking ref): a merge of what it fetched
// is likely to follow.
func (u *upstreamSource) fetchedInMount(req policy.Request) {
	for _, p := range []string{req.Path, req.Path2} {
		gitDir, inner, ok := policy.GitDirOf(p)
		if !ok || gitDir != ".git" {
			continue // the mirror is the upstream of the repository at the root
		}
		if inner == "FETCH_HEAD" || inner == "FETCH_HEAD.lock" || strings.HasPrefix(inner, "refs/remotes/") {
			u.configured().Kick()
			return
		}
	}
}
