package fuseuring

import (
	"errors"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// A request that waits a long time in the daemon (a change held for a
// human's approval, a blocking lock) keeps its ring entry until it is
// answered: the kernel ties the entry to the request, and the reply can
// only come back in that entry's buffers. The queue grows past such
// entries (queue.busy), but growing alone does not keep the queue moving.
//
// In fs/fuse/dev_uring.c a request that finds no free entry on its queue
// waits in the queue's list, and only a COMMIT_AND_FETCH takes it from
// there: an entry that commits a reply fetches the oldest waiting
// request. A newly registered entry does not (fuse_uring_do_register
// only makes it available), so it serves the requests that arrive after
// it and leaves the waiting ones waiting. When every busy entry of a
// queue is a long wait, nothing on that queue commits, and a request
// that came while the queue was full waits as long as the holds do: a
// uid that holds 32 changes for approval in a burst left other callers
// of the same CPU blocked for the holds' whole timeout
// (TestApprovalFloodFailsClosed).
//
// So the transport watches its entries. When one has been answering the
// same request for LongWait, it makes sure its queue has a free entry
// and sends one short request of its own on that queue's CPU (a kick: a
// GETATTR of the mount's root, forced past the kernel's cache): a free
// entry takes it and, committing the reply, fetches the oldest waiting
// request, if any. Each long wait kicks once, so every request that
// waited behind one gets an entry that commits: either it is short and
// its own commit fetches the next, or it becomes a long wait and kicks
// in turn. A kick is sent only while its queue has a registered free
// entry: one sent while the new entries were still registering would
// wait in the list behind the very requests it was meant to free, and
// once maxKicks of them waited so, nothing kicked again and the rest of
// a burst waited as long as the holds did. A kick can still arrive after the free entry it was meant
// for was taken, and wait in the list like any request; a kick still
// unanswered after LongWait is followed by another. A queue that has no
// free entry left and cannot grow (at MaxEntriesPerQueue) still waits
// for a commit; that bound keeps the daemon's threads bounded.

// DefaultLongWait is Options.LongWait's default: far above what a
// request answered from the page cache or a local disk takes, short
// enough that a request caught behind long waits is not noticed.
const DefaultLongWait = 100 * time.Millisecond

// watchStalls kicks the queues whose entries wait long, until the
// connection ends.
func (s *Server) watchStalls(longWait time.Duration) {
	if longWait <= 0 {
		longWait = DefaultLongWait
	}
	look := time.NewTimer(longWait / 2)
	defer look.Stop()
	for {
		if s.answering.Load() == 0 && !s.kicking() {
			// Nothing is being answered, so nothing waits: sleep until
			// an entry takes a request (no request can wait in the
			// kernel's list while an entry is free).
			select {
			case <-s.done:
				return
			case <-s.wake:
			}
			look.Reset(longWait / 2)
		}
		select {
		case <-s.done:
			return
		case now := <-look.C:
			s.looks.Add(1)
			for _, q := range s.queues {
				q.watch(now.UnixNano(), int64(longWait))
			}
			look.Reset(longWait / 2)
		}
	}
}

// answeringStarts counts an entry that takes a request, and wakes the
// stall watch if it was the first.
func (s *Server) answeringStarts() {
	if s.answering.Add(1) == 1 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// kicking reports whether a kick is under way on any queue.
func (s *Server) kicking() bool {
	for _, q := range s.queues {
		q.mu.Lock()
		n := len(q.kicks)
		q.mu.Unlock()
		if n > 0 {
			return true
		}
	}
	return false
}

// maxKicks bounds the kicks under way on one queue that may still be
// answered soon: each is a thread waiting for its reply. A kick that has
// waited LongWait is stuck in the kernel's list (the root's GETATTR is
// short) and does not hold the room: the queue needs another to move,
// so those are bounded by the queue's entries instead.
const maxKicks = 8

// watch kicks q once for each of its entries that became a long wait
// since it last looked, and once more if a kick has waited long itself.
//
// A kick only helps if a free entry takes it: one that finds none waits
// in the kernel's list with the requests it was meant to free. So kicks
// are sent only while the queue has a registered free entry (as many as
// it has), after growing one if none is free or on its way; while the
// queue's new entries are still registering (a loaded machine is slow to
// start their threads), the long waits keep their kicks for a later look.
func (q *queue) watch(now, longWait int64) {
	q.mu.Lock()
	fresh, stale := 0, 0
	for _, started := range q.kicks {
		if now-started >= longWait {
			stale++
		} else {
			fresh++
		}
	}
	var waits []*entry
	for e := range q.live {
		since := e.since.Load()
		if since != 0 && now-since >= longWait && e.kicked != since {
			waits = append(waits, e)
		}
	}
	want := len(waits)
	if want == 0 && stale > 0 {
		want = 1
	}
	room := min(maxKicks-fresh, q.max-len(q.kicks))
	free := q.idle - q.starting
	// A new entry is counted in loops while a live entry, counted there
	// too, holds the count above zero: the transport cannot be seen as
	// stopped.
	grow := want > 0 && room > 0 && free <= 0 && q.starting == 0 && q.entries < q.max && len(q.live) > 0
	if grow {
		q.count()
		q.s.loops.Add(1)
		free = 1
	}
	kicks := max(0, min(want, room, free))
	for i := 0; i < kicks && i < len(waits); i++ {
		waits[i].kicked = waits[i].since.Load()
	}
	ids := make([]uint64, 0, kicks)
	for range kicks {
		q.kickID++
		q.kicks[q.kickID] = now
		ids = append(ids, q.kickID)
	}
	q.mu.Unlock()
	if grow {
		if err := q.start(); err != nil {
			if !connectionGone(err) {
				q.s.log.Warn("adding a FUSE ring entry failed", "queue", q.qid, "err", err)
			}
			q.mu.Lock()
			for _, id := range ids {
				delete(q.kicks, id)
			}
			for i := 0; i < kicks && i < len(waits); i++ {
				waits[i].kicked = 0
			}
			q.mu.Unlock()
			return
		}
	}
	for _, id := range ids {
		go q.kick(id)
	}
}

// kick sends one GETATTR of the mount's root from a thread that runs on
// q's CPU only, since the kernel picks a request's queue by the CPU its
// caller runs on, and returns when it is answered (or the connection
// ends).
func (q *queue) kick(id uint64) {
	defer func() {
		q.mu.Lock()
		delete(q.kicks, id)
		q.mu.Unlock()
	}()
	// The pinned thread is not given back: it ends with the goroutine.
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(int(q.qid))
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		// An offline CPU sends no requests to its queue.
		q.s.log.Debug("no kick for a FUSE ring queue", "queue", q.qid, "err", err)
		return
	}
	var st unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, q.s.mountpoint, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &st)
	if err != nil && !connectionGone(err) && !errors.Is(err, unix.EINTR) {
		q.s.log.Debug("kicking a FUSE ring queue failed", "queue", q.qid, "err", err)
	}
}
