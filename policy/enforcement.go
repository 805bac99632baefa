package policy

import (
	"slices"

	"gopkg.in/yaml.v3"
)

// Enforcement says what a refusal of the policy does: enforce refuses the
// change; observe lets it through and records the refusal it would have
// had, so a team can run its agents under a policy before it binds them.
type Enforcement string

// Enforcement modes. The zero value is enforce.
const (
	Enforce Enforcement = "enforce"
	Observe Enforcement = "observe"
)

// enforcement reads an `enforcement:` value; what names the key in
// messages.
func (p *parser) enforcement(v *yaml.Node, what string) Enforcement {
	if v.Kind == yaml.ScalarNode {
		switch Enforcement(v.Value) {
		case Enforce, Observe:
			return Enforcement(v.Value)
		}
	}
	p.errorf(v, "%s must be observe or enforce, not %q (observe allows and records what the policy would refuse; enforce refuses it)", what, v.Value)
	return ""
}

// EnforcementFor returns the enforcement in force for changes under the
// intent id: the intent's own if it sets one, else the workspace's, else
// enforce. An id the policy does not define (no intent, or one removed)
// answers to the workspace's.
func (s *Snapshot) EnforcementFor(id string) Enforcement {
	if s == nil || s.Intents == nil {
		return Enforce
	}
	if in := s.Intents.Get(id); in != nil && in.Enforcement != "" {
		return in.Enforcement
	}
	if s.Intents.Enforcement != "" {
		return s.Intents.Enforcement
	}
	return Enforce
}

// observableCodes are the refusals observe mode lifts: those that say the
// change is outside what the humans declared (its scope, or any intent
// at all). Everything else stays refused in every mode:
//   - PROTECTED_PATH: the policy, the ignore files and git's
//     configuration and hooks decide what everything else is; a change
//     to them would change the rules, not be judged by them.
//   - INTERNAL_ERROR: no decision could be made (no valid policy, a path
//     outside the workspace); failing closed is what keeps that safe.
//   - Decisions marked Binding: a refusal that keeps the record whole
//     (a hard link that would let writes to governed content go
//     unrecorded) is what observe mode relies on.
//
// The filesystem keeps its own refusals outside the policy (an unplaced
// process, a stale file, a ledger that cannot record, git's ref
// protections) in every mode.
func observableCodes() []Code {
	return []Code{CodeOutOfScope, CodeNoIntent, CodeUnknownIntent, CodeNotInProgress}
}

// Observed returns d as observe mode answers it for r: a refusal observe
// may lift, under an intent (or workspace) in observe mode, becomes an
// allowed decision that keeps the refusal's code and reason, with
// scope_validation FAIL and Observed set. Any other decision is returned
// as it is.
func (s *Snapshot) Observed(r Request, d Decision) Decision {
	if d.Allow || d.Binding || !slices.Contains(observableCodes(), d.Code) {
		return d
	}
	if s.EnforcementFor(r.Intent) != Observe {
		return d
	}
	d.Allow, d.Observed, d.Validation = true, true, ValidationFail
	d.Reason += " (allowed: observe mode records what the policy would refuse)"
	return d
}
