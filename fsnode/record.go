package fsnode

import "github.com/intentfs/intentfs/ledger"

// record appends a change made under g to the ledger.
func (r *Root) record(g grant, c ledger.Change) {
	if g.after != nil {
		g.after()
	}
	if !g.traced() {
		return
	}
	c.Intent = g.intent
	c.Process = g.proc
	c.Session = g.actor.Session
	c.Validation = string(g.decision.Validation)
	g.noteWouldDeny(&c)
	if g.upstream != nil {
		if c.RestoredFrom == "" {
			c.RestoredFrom = g.upstream.RestoredFrom()
		}
		if c.Reason == "" {
			c.Reason = g.decision.Reason
		}
	}
	if g.stale != "" && c.Code == "" {
		c.Code = string(CodeStale)
		c.Reason = joinReason(c.Reason, g.stale)
	}
	r.gov.Record(c)
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
