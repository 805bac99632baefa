package approvals

import (
	"slices"
	"time"
)

// maxGrants bounds the decisions remembered for the rest of a burst; past
// it, expired ones go first, then the oldest.
const maxGrants = 256

// burstCover is how long a denial (by a human, without --for, or by a
// timeout) also refuses the same rule's further changes by the same
// process: an `rm -rf` that was refused once is not held again file by
// file, and nobody is asked the same question a hundred times.
const burstCover = time.Minute

// grant is a decision that covers a rule's further changes by one
// process: until a time, or (start != 0) while the process that started
// at start lives.
type grant struct {
	rule  string
	pid   uint32
	start uint64
	until time.Time
	allow bool
	// by and id say whose decision, on which entry, it carries.
	by string
	id uint64
}

// startTimeOf returns a process's start time, to tell it from a later
// process with its pid; it is a field of the Queue so tests can stub it.
type startTimeOf func(pid uint32) (uint64, bool)

// covering returns the grant that decides a change of rule by pid, if any.
// Called with the queue's lock held.
func (g *Queue) covering(rule string, pid uint32, now time.Time) (grant, bool) {
	for i := len(g.grants) - 1; i >= 0; i-- {
		gr := g.grants[i]
		if gr.rule != rule || gr.pid != pid {
			continue
		}
		if gr.start != 0 {
			if st, ok := g.startTime(pid); ok && st == gr.start {
				return gr, true
			}
			continue
		}
		if now.Before(gr.until) {
			return gr, true
		}
	}
	return grant{}, false
}

// addGrant remembers gr, within maxGrants. Called with the lock held.
func (g *Queue) addGrant(gr grant, now time.Time) {
	if len(g.grants) >= maxGrants {
		g.grants = slices.DeleteFunc(g.grants, func(x grant) bool {
			if x.start != 0 {
				st, ok := g.startTime(x.pid)
				return !ok || st != x.start
			}
			return !now.Before(x.until)
		})
	}
	if len(g.grants) >= maxGrants {
		g.grants = slices.Delete(g.grants, 0, len(g.grants)-maxGrants+1)
	}
	g.grants = append(g.grants, gr)
}
