package policy

import (
	"fmt"
	"slices"
	"strings"
)

// transitions is the intent lifecycle: PENDING → IN_PROGRESS | ARCHIVED;
// IN_PROGRESS → COMPLETE | BLOCKED | ARCHIVED; BLOCKED → IN_PROGRESS |
// ARCHIVED; COMPLETE → ARCHIVED; ARCHIVED is terminal. Nothing returns to
// PENDING.
var transitions = map[Status][]Status{
	StatusPending:    {StatusInProgress, StatusArchived},
	StatusInProgress: {StatusComplete, StatusBlocked, StatusArchived},
	StatusBlocked:    {StatusInProgress, StatusArchived},
	StatusComplete:   {StatusArchived},
	StatusArchived:   {},
}

// AllowedTransitions lists the statuses an intent may move to from s.
func AllowedTransitions(s Status) []Status { return slices.Clone(transitions[s]) }

// CheckTransition refuses a move the lifecycle does not allow, naming the
// moves that are.
func CheckTransition(id string, from, to Status) error {
	if !to.Valid() {
		return fmt.Errorf("%q is not a status (one of %s)", to, statusList())
	}
	if slices.Contains(transitions[from], to) {
		return nil
	}
	allowed := transitions[from]
	if len(allowed) == 0 {
		return fmt.Errorf("intent %s is %s, which is final: it cannot move to %s", id, from, to)
	}
	names := make([]string, len(allowed))
	for i, s := range allowed {
		names[i] = string(s)
	}
	return fmt.Errorf("intent %s cannot move from %s to %s; from %s it can move to %s", id, from, to, from, strings.Join(names, " or "))
}
