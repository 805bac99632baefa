package daemon

import (
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// A denial is a ledger record and a log line. An agent that retries a
// refused write in a loop (8,000 a second is easy) would grow both without
// bound and fill the disk the ledger needs. The gate records the first
// denial of each kind in full and counts the rest: a kind is one process
// being refused one operation with one code, in one directory, for the
// same reason (the reason with the denied path taken out, so the same
// refusal of every file of a directory is one kind).
// At the end of each window a summary record (event denied, path the
// directory, repeats the count) accounts for the ones not recorded one by
// one, so the ledger still counts every denial.
//
// Kinds themselves are bounded too: beyond maxKindsPerWindow new kinds in
// a window, a uid's further denials are counted under one kind whose
// directory is "*", so spreading denials over many directories does not
// escape the bound.

// denialWindow is how long a kind's first denial covers its repeats.
const denialWindow = time.Second

// maxKindsPerWindow bounds the denials recorded in full per window.
const maxKindsPerWindow = 64

// denialKind is what makes denials alike.
type denialKind struct {
	pid, uid                   uint32
	op, code, dir, intent, why string
	// session is the agent session's id ("" for none); a summary
	// record names it.
	session string
}

// denialCount is a kind seen in the current window.
type denialCount struct {
	repeats int
	proc    *ledger.Process
	sess    *ledger.Session
	first   time.Time
}

// denialThrottle decides which denials are recorded in full.
type denialThrottle struct {
	mu     sync.Mutex
	start  time.Time
	kinds  map[denialKind]*denialCount
	window time.Duration
}

func newDenialThrottle() *denialThrottle {
	return &denialThrottle{kinds: map[denialKind]*denialCount{}, window: denialWindow}
}

// kindOf returns the kind of a denial of op on p.
func kindOf(op, code, intent, p, reason string, proc *ledger.Process, sess *ledger.Session) denialKind {
	k := denialKind{op: op, code: code, intent: intent, dir: path.Dir(p), why: reason}
	if sess != nil {
		k.session = sess.ID
	}
	if p != "" {
		k.why = strings.ReplaceAll(reason, p, "")
	}
	if proc != nil {
		k.pid, k.uid = proc.Pid, proc.Uid
	}
	return k
}

// admit reports whether a denial is the first of its kind in the window
// (record it in full) or counts it as a repeat.
func (g *denialThrottle) admit(k denialKind, proc *ledger.Process, sess *ledger.Session, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.kinds[k]; ok {
		c.repeats++
		return false
	}
	if len(g.kinds) >= maxKindsPerWindow {
		k = denialKind{uid: k.uid, op: "*", code: "*", dir: "*", why: "*", intent: k.intent, session: k.session}
		if c, ok := g.kinds[k]; ok {
			c.repeats++
			return false
		}
		g.kinds[k] = &denialCount{repeats: 1, proc: proc, sess: sess, first: now}
		return false
	}
	g.kinds[k] = &denialCount{proc: proc, sess: sess, first: now}
	return true
}

// due returns the summaries of the window if it has ended (all of them if
// force) and starts a new window.
func (g *denialThrottle) due(now time.Time, force bool) []ledger.Change {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !force && now.Sub(g.start) < g.window {
		return nil
	}
	var out []ledger.Change
	for k, c := range g.kinds {
		if c.repeats == 0 {
			continue
		}
		what := fmt.Sprintf("%s in %s/ (%s)", k.op, k.dir, k.code)
		if k.dir == "*" {
			what = "of any kind (more kinds than are recorded one by one)"
		}
		out = append(out, ledger.Change{Event: ledger.EventDenied, Path: k.dir, Intent: k.intent, Op: k.op, Code: k.code,
			Validation: string(policy.ValidationFail), Process: c.proc, Session: c.sess, Time: now, Repeats: c.repeats,
			Reason: fmt.Sprintf("%d more denials %s by uid %d since %s, counted, not recorded one by one",
				c.repeats, what, k.uid, c.first.UTC().Format(time.RFC3339Nano))})
	}
	clear(g.kinds)
	g.start = now
	return out
}
