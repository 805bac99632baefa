package fsnode

import (
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// observed is the decision of req under the enforcement mode in force
// (see policy.Snapshot.Observed): in observe mode a scope or intent
// refusal becomes an allowed change that carries the refusal it would
// have had. It runs after the decision's own refusals (protected paths,
// an unplaced process) are settled and before the filesystem's own
// (git's refs, a stale file, a ledger that cannot record), which stay in
// force in every mode.
func observed(snap *policy.Snapshot, req policy.Request, d policy.Decision) policy.Decision {
	return snap.Observed(req, d)
}

// noteWouldDeny puts the refusal an observed change would have had into
// its record: its code and reason, next to scope_validation FAIL.
func (g grant) noteWouldDeny(c *ledger.Change) {
	if !g.decision.Observed || c.Code != "" {
		return
	}
	c.Code = string(g.decision.Code)
	c.Reason = joinReason(g.decision.Reason, c.Reason)
}

// observesHolds reports whether approval rules only report the changes
// they cover under intent, rather than hold them: they do in observe
// mode.
func (r *Root) observesHolds(intent string) bool {
	return r.gov.Snapshot().EnforcementFor(intent) == policy.Observe
}
