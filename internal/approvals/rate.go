package approvals

import "time"

// rateBuckets is how finely a rate window is counted: the window is
// split into this many slices, so a rule costs the same fixed memory
// whatever its count or its window, and a change leaves the count at most
// one slice (1/32 of the window) later than it would with exact times.
const rateBuckets = 32

// maxRateWindows bounds the rate counters kept; past it, those idle for
// longer than their window are dropped, and if none is, the oldest.
const maxRateWindows = 1024

// window counts the changes a rate rule saw in its last Within.
type window struct {
	slice   time.Duration
	buckets [rateBuckets]struct {
		slot int64
		n    int
	}
	last time.Time
}

func newWindow(within time.Duration) *window {
	return &window{slice: max(within/rateBuckets, time.Millisecond)}
}

// addN counts n changes at now (a move that removes n files at once) and
// returns how many the window holds, these included.
func (w *window) addN(now time.Time, n int) int {
	slot := now.UnixNano() / int64(w.slice)
	b := &w.buckets[slot%rateBuckets]
	if b.slot != slot {
		b.slot, b.n = slot, 0
	}
	b.n += n
	w.last = now
	total := 0
	for _, b := range w.buckets {
		if b.slot > slot-rateBuckets && b.slot <= slot {
			total += b.n
		}
	}
	return total
}

// idle reports whether the window has counted nothing for a whole window.
func (w *window) idle(now time.Time) bool { return now.Sub(w.last) > w.slice*rateBuckets }
