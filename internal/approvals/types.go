// Package approvals keeps the changes that wait for a human: operations
// an approval rule holds (the FUSE request waits in Queue.Hold until a
// decision or a timeout) and scope requests an agent files. It counts the
// rate rules, remembers decisions that cover the rest of a burst, and
// bounds all of it: an agent that floods holds or requests is refused,
// never served at the cost of the mount.
package approvals

import (
	"time"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Kinds of pending entries.
const (
	KindHold         = "hold"
	KindScopeRequest = "scope_request"
)

// Verdicts of a decision.
const (
	VerdictApproved  = "approved"
	VerdictDenied    = "denied"
	VerdictTimedOut  = "timed_out"
	VerdictCancelled = "cancelled"
)

// Denial codes of a held change that does not proceed.
const (
	CodeDenied    policy.Code = "APPROVAL_DENIED"
	CodeTimedOut  policy.Code = "APPROVAL_TIMEOUT"
	CodeQueueFull policy.Code = "APPROVAL_QUEUE_FULL"
)

// Pending is one entry waiting for a human: a held change or a scope
// request.
type Pending struct {
	ID   uint64 `json:"id"`
	Kind string `json:"kind"`
	// Op, Path and Path2 are the held change (Path2: a rename's
	// destination or a link's target).
	Op    string `json:"op,omitempty"`
	Path  string `json:"path,omitempty"`
	Path2 string `json:"path2,omitempty"`
	// Intent is the intent the change or request is made under.
	Intent string `json:"intent,omitempty"`
	// Session is the agent session the process runs in, "" when sessions
	// are not in use.
	Session string `json:"session,omitempty"`
	// Rule names the approval rule that holds the change; Why says what
	// it holds, or why the agent asks for more scope.
	Rule string `json:"rule,omitempty"`
	Why  string `json:"why"`
	// Paths are the globs a scope request asks to add.
	Paths   []string        `json:"paths,omitempty"`
	Process *ledger.Process `json:"process,omitempty"`
	Since   time.Time       `json:"since"`
	// Deadline is when a held change is denied if nobody decides.
	Deadline time.Time `json:"deadline,omitzero"`
}

// Decision is how a pending entry ended.
type Decision struct {
	Pending Pending `json:"pending"`
	Verdict string  `json:"verdict"`
	// By names who decided: a person through the CLI, or "intentfs" for
	// a timeout or a cancelled hold.
	By string `json:"by"`
	// ByProcess is the decider's process, nil for intentfs itself.
	ByProcess *ledger.Process `json:"by_process,omitempty"`
	// For is how long the decision also covers the same rule's further
	// changes by the same process (0: this change only).
	For time.Duration `json:"for,omitempty"`
	// ForProcess is set when it covers them for as long as the process
	// lives.
	ForProcess bool   `json:"for_process,omitempty"`
	Reason     string `json:"reason,omitempty"`
	At         time.Time
}

// Held is a change an approval rule may hold.
type Held struct {
	Op          policy.Op
	Path, Path2 string
	Intent      string
	Session     string
	Process     *ledger.Process
	Uid, Pid    uint32
	// Destroys is set when the change destroys content of an existing
	// file (policy.Request.Destroys): rules on deletions cover it.
	Destroys bool
	// Size, if set, returns how many bytes of content the change
	// destroys (a deletion, the whole file); it is asked only when a
	// rule with larger_than covers the change.
	Size func() (int64, bool)
	// Removes, on a move out of the governed tree, lists the governed
	// files and directories it removes (policy.Request.Removes): rules
	// on deletions count each of them, with its bytes.
	Removes []policy.Removal
}

// Verdict is the outcome of Hold for the change.
type Verdict struct {
	// Proceed is set when the change may be made.
	Proceed bool
	// Interrupted is set when the caller gave up (a signal).
	Interrupted bool
	// Code and Reason say why a change that may not proceed is refused.
	Code   policy.Code
	Reason string
	// ID is the pending entry the change waited as, 0 if it did not wait.
	ID uint64
}
