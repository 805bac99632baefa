package fsnode

import (
	"context"
	"syscall"
)

// The daemon keeps an O_PATH handle of each directory the kernel knows
// (see withDir) and makes a request's *at calls on it as the caller. Such
// a call checks the caller's search permission on that directory alone;
// a path walk on the source checks every directory from the root down.
// Through the mount the kernel walks, but with the attributes it caches:
// between a chmod, chown or ACL change of an ancestor in the source and
// the watch's invalidation of the kernel's copy, a lookup, stat, readlink
// or xattr read below that ancestor would reach the daemon, and the held
// handle would answer it for a caller the source refuses. So those calls
// first walk from the source's root to the held directory as the caller:
// one openat2 of an O_PATH handle, beneath the root and through no
// symlink, that the source refuses exactly when a walk there would.
// Changes made through a held handle (create, mkdir, link, unlink,
// rmdir, rename, setattr) are checked the same way. Listings and opens
// of existing files need no such check: they open from the root as the
// caller already (see OpendirHandle and Open).

// reachDir fails, with the source's own error, unless the credentials of
// the calling thread may search every directory on the way from the
// source's root to directory rel (rel itself excluded: the *at call on
// its handle checks that one).
func reachDir(r *Root, rel string) error {
	if rel == "" {
		return nil
	}
	fd, err := r.openDir(rel)
	if err != nil {
		return err
	}
	return syscall.Close(fd)
}

// asCallerBelow runs fn, a call on held handles of directories dirs
// (workspace-relative), with the caller's credentials, once the caller
// has been found to reach each of dirs on the source. A request without
// a caller (the daemon's own) and root, whom no mode refuses a search,
// go straight to fn.
func (r *Root) asCallerBelow(ctx context.Context, fn func() error, dirs ...string) error {
	c, ok := r.callers.caller(ctx)
	if !ok {
		return fn()
	}
	return r.callers.switcher.Run(c, func() error {
		if c.Uid != 0 {
			if err := reachDirs(r, dirs); err != nil {
				return err
			}
		}
		return fn()
	})
}

// reachDirs is reachDir of each of dirs, once each.
func reachDirs(r *Root, dirs []string) error {
	for i, d := range dirs {
		if i > 0 && d == dirs[0] {
			continue
		}
		if err := reachDir(r, d); err != nil {
			return err
		}
	}
	return nil
}

// asCallerIn runs fn, a call on names in the directories nodes (n, or n
// and others) made through their held handles, as the caller, who must
// reach each of them on the source.
func (n *Node) asCallerIn(ctx context.Context, fn func() error, others ...*Node) error {
	dirs := make([]string, 0, 1+len(others))
	for _, d := range append([]*Node{n}, others...) {
		rel, ok := d.relPath()
		if !ok {
			return syscall.ENOENT
		}
		dirs = append(dirs, rel)
	}
	return n.root.asCallerBelow(ctx, fn, dirs...)
}

// asCallerOn runs fn, a call on n made through its parent's held handle,
// as the caller, who must reach that parent on the source.
func (n *Node) asCallerOn(ctx context.Context, fn func() error) error {
	rel, ok := n.relPath()
	if !ok {
		return syscall.ENOENT
	}
	dir, _ := splitRel(rel)
	return n.root.asCallerBelow(ctx, fn, dir)
}

// callerReaches is the check of asCallerBelow for a request that already
// runs as its caller (see CallerScope).
func (r *Root) callerReaches(ctx context.Context, dir string) error {
	if c, ok := r.callers.caller(ctx); ok && c.Uid != 0 {
		return reachDir(r, dir)
	}
	return nil
}
