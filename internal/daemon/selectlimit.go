package daemon

import (
	"sync"
	"time"
)

// Every select writes a ledger record of some 600 bytes. An agent
// writing two intent ids to .intentfs/active in a loop wrote hundreds of
// kilobytes a second until the disk was full, and then the fail-closed
// ledger refused every change, for everyone. A person or an agent
// switching intents does so a few times a minute; so each uid may select
// a burst of selectBurst, then selectsPerSecond a second. Selects beyond
// that are refused with EBUSY and counted as denials are (denialthrottle.go).

const (
	selectBurst      = 20
	selectsPerSecond = 5
	// maxSelectBuckets bounds the uids tracked at once; buckets that
	// have refilled are forgotten first, as they hold nothing.
	maxSelectBuckets = 1024
)

// selectBucket is one uid's allowance.
type selectBucket struct {
	tokens float64
	last   time.Time
}

// refill adds what has accrued since the bucket was last used.
func (b *selectBucket) refill(now time.Time) {
	b.tokens = min(selectBurst, b.tokens+now.Sub(b.last).Seconds()*selectsPerSecond)
	b.last = now
}

// selectLimiter rate-limits selects per uid.
type selectLimiter struct {
	mu    sync.Mutex
	byUID map[uint32]*selectBucket
}

func newSelectLimiter() *selectLimiter {
	return &selectLimiter{byUID: map[uint32]*selectBucket{}}
}

// allow takes one select from uid's allowance, reporting false if none
// is left.
func (l *selectLimiter) allow(uid uint32, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.byUID[uid]
	if b == nil {
		if len(l.byUID) >= maxSelectBuckets {
			l.forgetFull(now)
		}
		b = &selectBucket{tokens: selectBurst, last: now}
		l.byUID[uid] = b
	}
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// forgetFull drops the buckets that have refilled, and all of them if
// none has: a forgotten uid starts again with a full burst, which only
// lets a select through that a bound of uids would have refused.
func (l *selectLimiter) forgetFull(now time.Time) {
	for uid, b := range l.byUID {
		if b.refill(now); b.tokens >= selectBurst {
			delete(l.byUID, uid)
		}
	}
	if len(l.byUID) >= maxSelectBuckets {
		clear(l.byUID)
	}
}
