package approvals

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Default bounds of what waits. A held change keeps a FUSE request, a
// goroutine and (for an open or create) an OS thread of the daemon, and
// the kernel keeps the caller's directory locked: an agent that could
// hold without limit could starve the mount. Past a bound the change is
// refused (fail closed), never held.
const (
	DefaultMaxPending        = 128
	DefaultMaxPendingPerUID  = 32
	DefaultMaxRequestsPerUID = 8
	// maxRecent bounds the decisions kept for .intentfs/pending.
	maxRecent = 20
)

// DefaultDenyCover is how long a denial also refuses the same rule's
// further changes by the same process, unless the human says otherwise.
const DefaultDenyCover = burstCover

// ErrNotPending is returned for an id nobody waits on.
var ErrNotPending = errors.New("not pending")

// ErrFull is returned when a uid, or everyone, has as many entries
// waiting as allowed.
var ErrFull = errors.New("too many pending")

// Options configure a Queue.
type Options struct {
	// MaxPending bounds the entries waiting at once; MaxPendingPerUID the
	// held changes of one uid; MaxRequestsPerUID its scope requests.
	MaxPending, MaxPendingPerUID, MaxRequestsPerUID int
	// OnPending is told of every new entry, OnDecision of every decision
	// (to record it); both are called without the queue's lock.
	OnPending  func(Pending)
	OnDecision func(Decision)
	// StartTime returns a process's start time (for decisions that cover
	// a process for as long as it lives).
	StartTime func(pid uint32) (uint64, bool)
	// CallerKilled reports whether the process that asked (the pid a
	// FUSE request names) is killed or gone, so that its held change
	// ends as cancelled even where the kernel sends no interrupt (see
	// procinfo.Killed); nil: only the request's context ends a hold
	// early. KilledPoll is how often a hold asks (0: DefaultKilledPoll).
	CallerKilled func(pid uint32) bool
	KilledPoll   time.Duration
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// DefaultKilledPoll is how often a held change asks whether its caller
// was killed: a killed caller exits within about this long.
const DefaultKilledPoll = 250 * time.Millisecond

// Queue holds changes for approval and keeps scope requests.
type Queue struct {
	opts      Options
	now       func() time.Time
	startTime startTimeOf

	mu      sync.Mutex
	next    uint64
	entries map[uint64]*entry
	perUID  map[uint32]int
	rates   map[string]*window
	grants  []grant
	recent  []Decision
}

type entry struct {
	p    Pending
	uid  uint32
	pid  uint32
	rule string
	// done receives the decision of a held change (buffered: the decider
	// never waits for the holder).
	done chan Decision
}

// New returns a Queue.
func New(o Options) *Queue {
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.MaxPendingPerUID <= 0 {
		o.MaxPendingPerUID = DefaultMaxPendingPerUID
	}
	if o.MaxRequestsPerUID <= 0 {
		o.MaxRequestsPerUID = DefaultMaxRequestsPerUID
	}
	g := &Queue{opts: o, now: o.Now, startTime: o.StartTime, entries: map[uint64]*entry{},
		perUID: map[uint32]int{}, rates: map[string]*window{}}
	if g.now == nil {
		g.now = time.Now
	}
	if g.startTime == nil {
		g.startTime = func(uint32) (uint64, bool) { return 0, false }
	}
	return g
}

// Hold decides whether rules hold h, and if one does, waits until a human
// decides, the rule's timeout passes or ctx ends (the caller was
// interrupted). No lock is held while it waits.
func (g *Queue) Hold(ctx context.Context, h Held, rules []*policy.ApprovalRule) Verdict {
	matched := matching(h, rules)
	if len(matched) == 0 {
		return Verdict{Proceed: true}
	}
	now := g.now()
	g.mu.Lock()
	rule := g.holding(matched, now)
	// A denial that covers the rest of a burst refuses every change the
	// rule covers, whether or not the rate would hold it now: the rest
	// of a refused rm -rf stays refused after its window has passed.
	for _, m := range matched {
		r := m.rule
		if gr, ok := g.covering(r.Key(), h.Pid, now); ok && !gr.allow {
			g.mu.Unlock()
			return Verdict{Code: CodeDenied, Reason: fmt.Sprintf("approval rule %s holds %s; %s denied it for this process (decision %d)%s: ask the person supervising you before trying again",
				r.Name, r.Describe(), gr.by, gr.id, untilText(gr))}
		}
	}
	if rule == nil {
		g.mu.Unlock()
		return Verdict{Proceed: true}
	}
	if gr, ok := g.covering(rule.Key(), h.Pid, now); ok && gr.allow {
		g.mu.Unlock()
		return Verdict{Proceed: true}
	}
	if g.holdsOf(h.Uid) >= g.opts.MaxPendingPerUID || len(g.entries) >= g.opts.MaxPending {
		g.mu.Unlock()
		return Verdict{Code: CodeQueueFull, Reason: fmt.Sprintf("approval rule %s holds %s, but too many changes already wait for a human (at most %d per user, %d in all), so it is refused: wait for `intentfs approvals` to be worked through",
			rule.Name, rule.Describe(), g.opts.MaxPendingPerUID, g.opts.MaxPending)}
	}
	g.next++
	e := &entry{uid: h.Uid, pid: h.Pid, rule: rule.Key(), done: make(chan Decision, 1), p: Pending{
		ID: g.next, Kind: KindHold, Op: string(h.Op), Path: h.Path, Path2: h.Path2, Intent: h.Intent, Session: h.Session,
		Rule: rule.Name, Why: rule.Describe(), Process: h.Process, Since: now, Deadline: now.Add(rule.Timeout),
	}}
	g.entries[e.p.ID] = e
	g.perUID[h.Uid]++
	g.mu.Unlock()
	if g.opts.OnPending != nil {
		g.opts.OnPending(e.p)
	}

	timer := time.NewTimer(rule.Timeout)
	defer timer.Stop()
	// The kernel interrupts the request of a caller that gets a signal
	// (ctx ends), but not every killed caller's: the hold also looks.
	var killed <-chan time.Time
	if g.opts.CallerKilled != nil && h.Pid != 0 {
		poll := g.opts.KilledPoll
		if poll <= 0 {
			poll = DefaultKilledPoll
		}
		tick := time.NewTicker(poll)
		defer tick.Stop()
		killed = tick.C
	}
	for {
		select {
		case d := <-e.done:
			return verdictOf(d)
		case <-ctx.Done():
			return g.cancel(e, "the waiting process was interrupted (a signal) before anyone decided")
		case <-killed:
			if g.opts.CallerKilled(h.Pid) {
				return g.cancel(e, "the waiting process was killed before anyone decided")
			}
		case <-timer.C:
			d := Decision{Pending: e.p, Verdict: VerdictTimedOut, By: "intentfs", For: burstCover,
				Reason: fmt.Sprintf("nobody decided within %s", rule.Timeout)}
			if !g.finish(e, d) {
				return verdictOf(<-e.done)
			}
			return verdictOf(d)
		}
	}
}

// cancel ends the hold of e because its caller stopped waiting, unless a
// decision came first.
func (g *Queue) cancel(e *entry, why string) Verdict {
	d := Decision{Pending: e.p, Verdict: VerdictCancelled, By: "intentfs", Reason: why}
	if !g.finish(e, d) {
		return verdictOf(<-e.done)
	}
	return Verdict{Interrupted: true, ID: e.p.ID}
}

// WouldHold returns the rule that would hold h, or nil, without holding
// it: observe mode reports such a change and lets it proceed. Rate rules
// count the change as Hold does, so a burst is reported as it would be
// held.
func (g *Queue) WouldHold(h Held, rules []*policy.ApprovalRule) *policy.ApprovalRule {
	matched := matching(h, rules)
	if len(matched) == 0 {
		return nil
	}
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holding(matched, now)
}

// match is a rule that covers a change, and how many of the rule's
// changes the change counts as.
type match struct {
	rule  *policy.ApprovalRule
	count int
}

// matching returns the rules that cover h.
func matching(h Held, rules []*policy.ApprovalRule) []match {
	var matched []match
	for _, r := range rules {
		count, size, ok := covers(r, h)
		if !ok {
			continue
		}
		if r.LargerThan > 0 {
			if size == nil {
				continue
			}
			// A size that cannot be read is a deletion that fails anyway
			// (the file is gone); it is not held.
			if n, ok := size(); !ok || n <= r.LargerThan {
				continue
			}
		}
		matched = append(matched, match{rule: r, count: count})
	}
	return matched
}

// covers reports whether rule r covers h, as how many of the rule's
// changes h counts as and the probe of the bytes it destroys that the
// rule sees. A move out of the governed tree (h.Removes) is, for a rule
// that does not name its operation, the removal of each entry it takes
// along: each one the rule covers as an unlink or rmdir is counted, and
// their bytes add up.
func covers(r *policy.ApprovalRule, h Held) (int, func() (int64, bool), bool) {
	if len(h.Removes) == 0 {
		return 1, h.Size, r.MatchesEffect(h.Op, h.Destroys, h.Path, h.Path2)
	}
	if r.Matches(h.Op, h.Path, h.Path2) {
		var total int64
		for _, rm := range h.Removes {
			total += rm.Size
		}
		return 1, func() (int64, bool) { return total, true }, true
	}
	count, total := 0, int64(0)
	for _, rm := range h.Removes {
		op := policy.OpUnlink
		if rm.IsDir {
			op = policy.OpRmdir
		}
		if r.Matches(op, rm.Path) {
			count++
			total += rm.Size
		}
	}
	return count, func() (int64, bool) { return total, true }, count > 0
}

// holding returns the first of the matched rules that holds the change
// now, counting it in every matching rate rule. Called with the lock
// held.
func (g *Queue) holding(matched []match, now time.Time) *policy.ApprovalRule {
	var rule *policy.ApprovalRule
	for _, m := range matched {
		// Every matching rate rule counts the change, whichever holds it.
		if m.rule.MoreThan > 0 && g.rate(m.rule, now).addN(now, m.count) <= m.rule.MoreThan {
			continue
		}
		if rule == nil {
			rule = m.rule
		}
	}
	return rule
}

// untilText says how long a covering denial lasts.
func untilText(gr grant) string {
	if gr.start != 0 {
		return " for as long as it runs"
	}
	return " until " + gr.until.UTC().Format(time.RFC3339)
}

// verdictOf turns the decision on a held change into what the change gets.
func verdictOf(d Decision) Verdict {
	id := d.Pending.ID
	switch d.Verdict {
	case VerdictApproved:
		return Verdict{Proceed: true, ID: id}
	case VerdictCancelled:
		return Verdict{Interrupted: true, ID: id}
	case VerdictTimedOut:
		return Verdict{ID: id, Code: CodeTimedOut, Reason: fmt.Sprintf("held for approval as %d by rule %s (%s), but nobody decided within %s, so it is denied; this rule's changes by the same process are refused for the next %s: ask the person supervising you to run `intentfs approve %d` next time",
			id, d.Pending.Rule, d.Pending.Why, d.Pending.Deadline.Sub(d.Pending.Since).Round(time.Second), d.For, id)}
	}
	why := ""
	if d.Reason != "" {
		why = ": " + d.Reason
	}
	return Verdict{ID: id, Code: CodeDenied, Reason: fmt.Sprintf("held for approval as %d by rule %s (%s) and denied by %s%s", id, d.Pending.Rule, d.Pending.Why, d.By, why)}
}

// holdsOf counts the held changes of uid. Called with the lock held.
func (g *Queue) holdsOf(uid uint32) int { return g.perUID[uid] }

// rate returns the counter of rule r. Called with the lock held.
func (g *Queue) rate(r *policy.ApprovalRule, now time.Time) *window {
	w := g.rates[r.Key()]
	if w != nil && w.slice == max(r.Within/rateBuckets, time.Millisecond) {
		return w
	}
	if len(g.rates) >= maxRateWindows {
		maps.DeleteFunc(g.rates, func(_ string, w *window) bool { return w.idle(now) })
		if len(g.rates) >= maxRateWindows {
			clear(g.rates)
		}
	}
	w = newWindow(r.Within)
	g.rates[r.Key()] = w
	return w
}

// finish removes e and hands d on, unless someone else finished it first
// (then it reports false and e.done has their decision).
func (g *Queue) finish(e *entry, d Decision) bool {
	g.mu.Lock()
	if g.entries[e.p.ID] != e {
		g.mu.Unlock()
		return false
	}
	d.At = g.now()
	g.remove(e)
	if d.Verdict == VerdictTimedOut {
		g.addGrant(grant{rule: e.rule, pid: e.pid, until: d.At.Add(d.For), by: "a timeout", id: e.p.ID}, d.At)
	}
	g.remember(d)
	g.mu.Unlock()
	if g.opts.OnDecision != nil {
		g.opts.OnDecision(d)
	}
	return true
}

// remove takes e off the books. Called with the lock held.
func (g *Queue) remove(e *entry) {
	delete(g.entries, e.p.ID)
	if e.p.Kind == KindHold {
		if g.perUID[e.uid]--; g.perUID[e.uid] <= 0 {
			delete(g.perUID, e.uid)
		}
	}
}

// remember keeps d for .intentfs/pending. Called with the lock held.
func (g *Queue) remember(d Decision) {
	g.recent = append(g.recent, d)
	if len(g.recent) > maxRecent {
		g.recent = slices.Delete(g.recent, 0, len(g.recent)-maxRecent)
	}
}

// Settle carries out a human's decision on the pending entry id: approve or deny
// (verdict VerdictApproved or VerdictDenied), made by by (byProc). For a
// held change, cover > 0 also decides the same rule's further changes by
// the same process for that long, and coverProcess for as long as that
// process lives; other changes of it that wait under the rule are decided
// with it. It returns every decision made, the named one first.
func (g *Queue) Settle(id uint64, verdict, by string, byProc *ledger.Process, cover time.Duration, coverProcess bool, reason string) ([]Decision, error) {
	if verdict != VerdictApproved && verdict != VerdictDenied {
		return nil, fmt.Errorf("unknown verdict %q", verdict)
	}
	g.mu.Lock()
	e := g.entries[id]
	if e == nil {
		g.mu.Unlock()
		return nil, fmt.Errorf("%d is %w: it was decided, timed out, or its process ended (see intentfs approvals)", id, ErrNotPending)
	}
	now := g.now()
	base := Decision{Verdict: verdict, By: by, ByProcess: byProc, Reason: reason, At: now}
	if e.p.Kind == KindHold {
		base.For, base.ForProcess = cover, coverProcess
	}
	first := base
	first.Pending = e.p
	out := []Decision{first}
	g.remove(e)
	if e.done != nil {
		e.done <- first
	}
	if e.p.Kind == KindHold && (cover > 0 || coverProcess) {
		gr := grant{rule: e.rule, pid: e.pid, until: now.Add(cover), allow: verdict == VerdictApproved, by: by, id: id}
		if coverProcess {
			if st, ok := g.startTime(e.pid); ok {
				gr.start = st
			} else {
				gr.until = now // the process is gone: nothing left to cover
			}
		}
		g.addGrant(gr, now)
		for _, other := range g.sorted() {
			if other.p.Kind == KindHold && other.rule == e.rule && other.pid == e.pid {
				d := base
				d.Pending = other.p
				d.Reason = joinReason(reason, fmt.Sprintf("covered by the decision on %d", id))
				g.remove(other)
				other.done <- d
				out = append(out, d)
			}
		}
	}
	for _, d := range out {
		g.remember(d)
	}
	g.mu.Unlock()
	if g.opts.OnDecision != nil {
		for _, d := range out {
			g.opts.OnDecision(d)
		}
	}
	return out, nil
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + " (" + b + ")"
}

// sorted lists the entries by id. Called with the lock held.
func (g *Queue) sorted() []*entry {
	out := slices.Collect(maps.Values(g.entries))
	slices.SortFunc(out, func(a, b *entry) int {
		switch {
		case a.p.ID < b.p.ID:
			return -1
		case a.p.ID > b.p.ID:
			return 1
		}
		return 0
	})
	return out
}

// Request files a scope request of uid and returns its id. Requests wait
// without holding anything, but are bounded like holds.
func (g *Queue) Request(uid uint32, p Pending) (uint64, error) {
	g.mu.Lock()
	n := 0
	for _, e := range g.entries {
		if e.p.Kind == KindScopeRequest && e.uid == uid {
			n++
		}
	}
	if n >= g.opts.MaxRequestsPerUID || len(g.entries) >= g.opts.MaxPending {
		g.mu.Unlock()
		return 0, fmt.Errorf("%w: at most %d scope requests per user and %d entries in all wait at once; wait for a decision (see .intentfs/pending)",
			ErrFull, g.opts.MaxRequestsPerUID, g.opts.MaxPending)
	}
	g.next++
	p.ID, p.Kind, p.Since = g.next, KindScopeRequest, g.now()
	g.entries[p.ID] = &entry{p: p, uid: uid}
	g.mu.Unlock()
	if g.opts.OnPending != nil {
		g.opts.OnPending(p)
	}
	return p.ID, nil
}

// Get returns the pending entry id.
func (g *Queue) Get(id uint64) (Pending, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.entries[id]; e != nil {
		return e.p, true
	}
	return Pending{}, false
}

// List returns what waits, oldest first.
func (g *Queue) List() []Pending {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Pending
	for _, e := range g.sorted() {
		out = append(out, e.p)
	}
	return out
}

// Recent returns the last decisions, oldest first.
func (g *Queue) Recent() []Decision {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.recent)
}
