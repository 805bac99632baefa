package daemon

import (
	"context"
	"time"

	"github.com/intentfs/intentfs/internal/srcwatch"
)

// Cache timeouts. With the source watched, the kernel keeps entries and
// attributes for longCache: every change through the mount updates its
// caches as it is made, and the watcher invalidates what changes in the
// source directly within milliseconds. Without a watcher (not root, or a
// source filesystem fanotify cannot report by handle), they are kept for
// shortCache, which is then how long a change made directly in the
// source may take to show. "No such file" answers are kept for
// shortCache either way: after the kernel's event queue overflows, the
// names it caches as absent cannot be listed to drop them.
const (
	longCache  = time.Hour
	shortCache = time.Second
)

// settleDelay is how long a batch of source events waits before it is
// compared with the mount's view: a change made through the mount is
// seen in the source before the request that made it has returned and
// linked the new entry into the mount's tree, and comparing then would
// drop a cache entry the kernel is about to fill. Waiting costs nothing
// in correctness (an out-of-band change shows a few milliseconds later)
// and saves those LOOKUPs.
const settleDelay = 2 * time.Millisecond

// watchSource starts watching the source, or returns nil, having logged
// why, when it cannot be watched.
func (d *Daemon) watchSource() *srcwatch.Watcher {
	w, err := srcwatch.New(d.cfg.Source)
	if err != nil {
		d.log.Info("changes made directly in the source show within the cache timeout", "timeout", shortCache, "reason", err)
		return nil
	}
	return w
}

// runSourceWatch hands source events to the mount until ctx is done.
func (d *Daemon) runSourceWatch(ctx context.Context, w *srcwatch.Watcher) {
	defer w.Close()
	err := w.Run(ctx, func(evs []srcwatch.Event) {
		time.Sleep(settleDelay)
		d.root.SourceChanged(evs)
	})
	if err != nil {
		// The kernel would keep stale entries for longCache: stopping
		// here is worse than a slow mount, so say so loudly.
		d.log.Error("watching the source failed; changes made directly in it may not show until the cache timeout", "timeout", longCache, "err", err)
	}
}
