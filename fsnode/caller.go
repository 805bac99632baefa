package fsnode

import (
	"context"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/creds"
	"github.com/intentfs/intentfs/internal/fileperm"
)

// callers runs the operations of a request with the credentials of the
// process that made it (see internal/creds for why). FUSE sends a
// caller's uid, gid and pid; its supplementary groups come from /proc and
// are kept for groupsTTL per pid.
type callers struct {
	switcher *creds.Switcher

	mu     sync.Mutex
	groups map[groupsKey]groupsEntry
}

type groupsKey struct{ pid, uid, gid uint32 }

type groupsEntry struct {
	groups []uint32
	read   time.Time
}

const (
	// groupsTTL bounds how long a process's groups are reused. The kernel
	// has already checked the caller with its real groups; these only
	// matter when a name changes between that check and the daemon's
	// call, so a second of staleness after a setgroups(2) is tolerable,
	// while reading /proc on every request is not.
	groupsTTL = time.Second
	// maxGroupsEntries bounds the cache; past it, it starts over.
	maxGroupsEntries = 4096
)

func newCallers(s *creds.Switcher) *callers {
	return &callers{switcher: s, groups: map[groupsKey]groupsEntry{}}
}

// caller describes who made the request in ctx. A request without a
// caller (the daemon's own) runs as the daemon.
func (c *callers) caller(ctx context.Context) (creds.Caller, bool) {
	fc, ok := fuse.FromContext(ctx)
	if !ok || fc == nil {
		return creds.Caller{}, false
	}
	return c.of(fc), true
}

func (c *callers) of(fc *fuse.Caller) creds.Caller {
	cr := creds.Caller{Uid: fc.Uid, Gid: fc.Gid}
	if fc.Uid == 0 || !c.switcher.Enabled() {
		return cr
	}
	key := groupsKey{fc.Pid, fc.Uid, fc.Gid}
	now := time.Now()
	c.mu.Lock()
	e, ok := c.groups[key]
	c.mu.Unlock()
	if ok && now.Sub(e.read) < groupsTTL {
		cr.Groups = e.groups
		return cr
	}
	// A process that is gone, or whose status cannot be read, gets no
	// supplementary groups: fewer rights, never more.
	gs, _ := creds.ReadGroups(fc.Pid)
	c.mu.Lock()
	if len(c.groups) >= maxGroupsEntries {
		clear(c.groups)
	}
	c.groups[key] = groupsEntry{groups: gs, read: now}
	c.mu.Unlock()
	cr.Groups = gs
	return cr
}

// asCaller runs fn, a call on the source made for the request in ctx,
// with the caller's filesystem credentials: the source's own permission
// checks (mode bits, ACLs) then apply to the very file fn reaches, even if
// a rename put another file under the name the kernel checked.
func (r *Root) asCaller(ctx context.Context, fn func() error) error {
	c, ok := r.callers.caller(ctx)
	if !ok {
		return fn()
	}
	return r.callers.switcher.Run(c, fn)
}

// AsDaemon runs fn with the daemon's credentials in a request that runs
// as its caller (see asDaemon), for nodes outside this package: the
// control directory.
func (r *Root) AsDaemon(ctx context.Context, fn func() error) error { return r.asDaemon(ctx, fn) }

// asDaemon runs fn, the daemon's own work in the middle of a request that
// runs as its caller (see CallerScope), with the daemon's credentials.
// Elsewhere it just calls fn.
func (r *Root) asDaemon(ctx context.Context, fn func() error) error {
	c, _ := r.callers.caller(ctx)
	return r.callers.switcher.AsDaemon(c, fn)
}

// FilePermission says whether the source's own permissions (owner, mode,
// ACLs) let the process pid, running as uid and gid, make the change op
// to the workspace-relative path rel: nil when they do or cannot tell.
// Through the mount the kernel refuses such a change before the daemon
// sees it, so a dry run asks here to tell that refusal from the policy's.
func (r *Root) FilePermission(pid, uid, gid uint32, rel, op string) (*fileperm.Refusal, error) {
	if r.closed.Load() {
		return nil, nil
	}
	c := r.callers.of(&fuse.Caller{Owner: fuse.Owner{Uid: uid, Gid: gid}, Pid: pid})
	return fileperm.Check(r.rootFd, rel, op, c, func(fn func() error) error { return r.callers.switcher.Run(c, fn) })
}
