// Package feed fans the mount's events out to live watchers (intentfs
// watch). Publishing never blocks and never waits for a watcher: each
// watcher has a bounded buffer, and what does not fit is dropped for that
// watcher alone and counted, so it learns how much it missed. A mount
// nobody watches pays one atomic load per event.
package feed

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Event kinds.
const (
	// KindChange is a change made through the mount (a ledger record of a
	// mutation), KindDenied a refused one.
	KindChange = "change"
	KindDenied = "denied"
	// KindHeld is a change or scope request that now waits for a human,
	// KindDecided its decision.
	KindHeld    = "held"
	KindDecided = "decided"
	// KindGovernance is a selection, lifecycle or scope change.
	KindGovernance = "governance"
	// KindDropped says how many events this watcher missed because it did
	// not read them fast enough.
	KindDropped = "dropped"
)

// Event is one thing a watcher sees.
type Event struct {
	// Seq numbers the published events; a gap means events were dropped.
	Seq  uint64    `json:"seq,omitempty"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// Event is the ledger event (create, delete, select, ...).
	Event   string `json:"event,omitempty"`
	Op      string `json:"op,omitempty"`
	Path    string `json:"path,omitempty"`
	Path2   string `json:"path2,omitempty"`
	Intent  string `json:"intent,omitempty"`
	Session string `json:"session,omitempty"`
	Code    string `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Pid     uint32 `json:"pid,omitempty"`
	Uid     uint32 `json:"uid"`
	Comm    string `json:"comm,omitempty"`
	// ID is the pending entry of a held or decided event.
	ID uint64 `json:"id,omitempty"`
	// Verdict and By are a decision's.
	Verdict string `json:"verdict,omitempty"`
	By      string `json:"by,omitempty"`
	// Dropped counts the events missed, on a dropped event.
	Dropped uint64 `json:"dropped,omitempty"`
}

// Buffer is how many events a watcher may fall behind before it loses
// some: an untar of a few thousand files fits.
const Buffer = 8192

// MaxWatchers bounds the watchers of one mount.
const MaxWatchers = 16

// ErrTooMany is returned when MaxWatchers already watch.
var ErrTooMany = errors.New("too many watchers")

// Hub is the fan-out.
type Hub struct {
	seq  atomic.Uint64
	subs atomic.Pointer[[]*Sub]
	mu   sync.Mutex // serialises Subscribe and cancel
}

// Sub is one watcher.
type Sub struct {
	ch      chan Event
	dropped atomic.Uint64
}

// Active reports whether anyone watches, so a publisher can skip building
// an event nobody reads.
func (h *Hub) Active() bool {
	s := h.subs.Load()
	return s != nil && len(*s) > 0
}

// Publish hands ev to every watcher that has room, without waiting.
func (h *Hub) Publish(ev Event) {
	s := h.subs.Load()
	if s == nil || len(*s) == 0 {
		return
	}
	ev.Seq = h.seq.Add(1)
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	for _, sub := range *s {
		select {
		case sub.ch <- ev:
		default:
			sub.dropped.Add(1)
		}
	}
}

// Subscribe adds a watcher; cancel removes it.
func (h *Hub) Subscribe() (sub *Sub, cancel func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var cur []*Sub
	if p := h.subs.Load(); p != nil {
		cur = *p
	}
	if len(cur) >= MaxWatchers {
		return nil, nil, ErrTooMany
	}
	sub = &Sub{ch: make(chan Event, Buffer)}
	next := append(slices.Clip(cur), sub)
	h.subs.Store(&next)
	return sub, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		p := h.subs.Load()
		if p == nil {
			return
		}
		rest := slices.DeleteFunc(slices.Clone(*p), func(s *Sub) bool { return s == sub })
		h.subs.Store(&rest)
	}, nil
}

// C returns the channel events arrive on, for a select that also waits
// on other things; use Take on what it yields.
func (s *Sub) C() <-chan Event { return s.ch }

// Take turns an event received from C into what the watcher is shown:
// a KindDropped event first, when events were dropped before it.
func (s *Sub) Take(ev Event) []Event {
	if n := s.dropped.Swap(0); n > 0 {
		return []Event{{Time: time.Now(), Kind: KindDropped, Dropped: n}, ev}
	}
	return []Event{ev}
}
