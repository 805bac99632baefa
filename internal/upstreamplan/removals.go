package upstreamplan

import (
	"strings"
	"sync"
	"time"
)

// git checks a file out by removing it and creating it anew. Outside the
// scope, a removal toward the upstream's other content there is let
// through only as the first half of that pair: the mount makes a copy of
// the removed file first, unnamed, and links it back in its place unless
// git's verified creation follows before the git process ends, or within
// RemovalFor.
//
// Holes an attack found, and what closes them:
//   - put back by path, a removal was lost when the agent removed or
//     renamed its (in-scope) directory: no directory above a pending
//     removal or creation may be removed or renamed (PendingUnder);
//   - put back as a new file, a removal was lost when the agent had used
//     up the filesystem's inodes: the mount makes the copy before the
//     removal (which frees the original's inode), and linking it in needs
//     none;
//   - one git process removing the file again as soon as it was put back
//     kept it missing: each removal is put back after RemovalFor even if
//     git lives on, a git process that left a removal incomplete may
//     remove nothing more outside the scope (BarredWhy), and a path put
//     back cannot be removed toward the upstream again for Cooldown.

const (
	// MaxPending bounds the removals waiting for their creation (each
	// holds its copy open), the paths in their cooldown, the git
	// processes barred and the files being created; past it, such
	// changes are refused, never forgotten. git completes each removal
	// before the next.
	MaxPending = 1024
	// RemovalFor is how long a removal waits for its creation: git
	// creates the file right after it removes it.
	RemovalFor = 10 * time.Second
	// Cooldown is how long a path whose removal was put back cannot be
	// removed toward the upstream again.
	Cooldown = time.Minute
	// SinkFor is how long git may keep a file it creates from the
	// upstream open: past it, the file is refused at close, and the
	// directories above it are no longer kept from moving.
	SinkFor = 10 * time.Second
)

// Removals are the removals git made outside the scope that wait for
// their creation, by path (each an R, what the mount needs to put it
// back), the git processes watched for them, the paths put back in their
// cooldown, the git processes barred, and the files being created from
// the upstream (each an S). The zero value is ready to use.
type Removals[R any, S comparable] struct {
	mu       sync.Mutex
	pending  map[string]pending[R]
	watched  map[uint32]bool      // pids with a watcher
	cooldown map[string]time.Time // path → until when it may not be removed again
	barred   map[uint32]time.Time // git processes that left a removal incomplete
	sinks    map[S]sink
	// busy counts removals taken and not yet settled (Settled), which
	// Wait waits for.
	busy sync.WaitGroup
}

// pending is a removal waiting for its creation.
type pending[R any] struct {
	rm  R
	pid uint32
	at  time.Time
}

// sink is a file being created from the upstream.
type sink struct {
	rel     string
	created time.Time
}

// Put notes rm, a removal at rel by the git process pid made at at, and
// reports whether the watcher of pid must be started; why says why the
// removal must be refused instead: pid is barred, rel is in its
// cooldown, or there is no room.
func (u *Removals[R, S]) Put(rel string, pid uint32, at time.Time, rm R) (start bool, why string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.pending == nil {
		u.pending, u.watched, u.cooldown = map[string]pending[R]{}, map[uint32]bool{}, map[string]time.Time{}
	}
	if why := u.barredLocked(pid); why != "" {
		return false, why
	}
	if until, ok := u.cooldown[rel]; ok {
		if time.Now().Before(until) {
			return false, "git removed it recently without writing it again; it stays until " + until.Format(time.TimeOnly)
		}
		delete(u.cooldown, rel)
	}
	if _, dup := u.pending[rel]; !dup && len(u.pending) >= MaxPending {
		return false, "too many removals are waiting for git to write their files again"
	}
	if trim(u.cooldown, time.Now()); len(u.cooldown) >= MaxPending {
		// Entries still in their cooldown would have to go: refuse
		// rather than forget one.
		return false, "too many files were put back in the last minute"
	}
	u.pending[rel] = pending[R]{rm: rm, pid: pid, at: at}
	start = !u.watched[pid]
	u.watched[pid] = true
	return start, ""
}

// Take returns and forgets the removal at rel; the caller completes it or
// puts it back, then calls Settled.
func (u *Removals[R, S]) Take(rel string) (R, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p, ok := u.pending[rel]
	if ok {
		delete(u.pending, rel)
		u.busy.Add(1)
	}
	return p.rm, ok
}

// Due takes pid's removals that waited RemovalFor, or all of them if the
// process ended (or all is set: every pid's); done says that pid has none
// left, and its watch ends. The caller settles each (Settled).
func (u *Removals[R, S]) Due(pid uint32, ended, all bool, now time.Time) (out map[string]R, done bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	out = map[string]R{}
	left := 0
	for rel, p := range u.pending {
		if !all && p.pid != pid {
			continue
		}
		if all || ended || now.Sub(p.at) >= RemovalFor {
			out[rel] = p.rm
			delete(u.pending, rel)
			u.busy.Add(1)
			continue
		}
		left++
	}
	if all {
		clear(u.watched)
		return out, true
	}
	if left == 0 {
		delete(u.watched, pid)
	}
	return out, left == 0
}

// Settled says a removal Take or Due returned is completed or put back.
func (u *Removals[R, S]) Settled() { u.busy.Done() }

// Wait waits until every removal taken is settled.
func (u *Removals[R, S]) Wait() { u.busy.Wait() }

// BarredWhy says why the git process pid may remove nothing outside the
// scope ("" if it may).
func (u *Removals[R, S]) BarredWhy(pid uint32) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.barredLocked(pid)
}

func (u *Removals[R, S]) barredLocked(pid uint32) string {
	if _, ok := u.barred[pid]; ok {
		return "this git process removed a file outside the scope before and did not write it again"
	}
	return ""
}

// Cool starts rel's cooldown, and bars the git process pid that left its
// removal incomplete. Past the bound, entries from before the cooldown
// go; if none has, the oldest do (a barred process is one a git command
// line ran: the bar matters while it lives).
func (u *Removals[R, S]) Cool(rel string, pid uint32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cooldown == nil {
		u.cooldown = map[string]time.Time{}
	}
	if u.barred == nil {
		u.barred = map[uint32]time.Time{}
	}
	now := time.Now()
	trimOldest(u.cooldown, now)
	trimOldest(u.barred, now.Add(-Cooldown))
	u.cooldown[rel] = now.Add(Cooldown)
	u.barred[pid] = now
}

// trim drops, when m is at MaxPending, its entries not after before.
func trim[K comparable](m map[K]time.Time, before time.Time) {
	if len(m) < MaxPending {
		return
	}
	for k, t := range m {
		if !t.After(before) {
			delete(m, k)
		}
	}
}

// trimOldest is trim, then the oldest entries go until there is room: a
// cooldown evicted so is of a path that Put refuses anyway while the map
// is full.
func trimOldest[K comparable](m map[K]time.Time, before time.Time) {
	trim(m, before)
	for len(m) >= MaxPending {
		var oldest K
		var at time.Time
		first := true
		for k, t := range m {
			if first || t.Before(at) {
				oldest, at, first = k, t, false
			}
		}
		delete(m, oldest)
	}
}

// AddSink keeps s, a file being created from the upstream at rel since
// created, unless another is being created at rel, or too many are; why
// says which.
func (u *Removals[R, S]) AddSink(s S, rel string, created time.Time) (why string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sinks == nil {
		u.sinks = map[S]sink{}
	}
	if len(u.sinks) >= MaxPending {
		return "too many files are being created from the upstream"
	}
	for _, o := range u.sinks {
		if o.rel == rel && time.Since(o.created) < SinkFor {
			return "git is creating it already"
		}
	}
	u.sinks[s] = sink{rel: rel, created: created}
	return ""
}

// DropSink forgets s, published or refused.
func (u *Removals[R, S]) DropSink(s S) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.sinks, s)
}

// PendingUnder names a removal waiting for its creation, or a file being
// created from the upstream, below directory rel ("" if none; rel ""
// is the root, above everything).
func (u *Removals[R, S]) PendingUnder(rel string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	below := func(p string) bool { return rel == "" || strings.HasPrefix(p, rel+"/") }
	for p := range u.pending {
		if below(p) {
			return p
		}
	}
	for _, s := range u.sinks {
		// A file kept open past SinkFor is refused at close, and
		// busies nothing.
		if below(s.rel) && time.Since(s.created) < SinkFor {
			return s.rel
		}
	}
	return ""
}
