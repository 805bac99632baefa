package control

import (
	"time"

	"github.com/intentfs/intentfs/ledger"
)

// The types below are what crosses the control socket. They are the
// control plane's own, so that it depends on no package behind the
// daemon; the daemon converts its packages' values to and from them.

// Kinds of a Pending entry.
const (
	// PendingHold is a held change, PendingScopeRequest an agent's
	// request for more scope.
	PendingHold         = "hold"
	PendingScopeRequest = "scope_request"
)

// Verdicts of a Decision.
const (
	VerdictApproved  = "approved"
	VerdictDenied    = "denied"
	VerdictTimedOut  = "timed_out"
	VerdictCancelled = "cancelled"
)

// Kinds of an Event.
const (
	// EventChange is a change made through the mount (a ledger record
	// of a mutation), EventDenied a refused one.
	EventChange = "change"
	EventDenied = "denied"
	// EventHeld is a change or scope request that now waits for a human,
	// EventDecided its decision.
	EventHeld    = "held"
	EventDecided = "decided"
	// EventGovernance is a selection, lifecycle or scope change.
	EventGovernance = "governance"
	// EventPending is the list of what waits, sent once a second and
	// when a watcher starts, so a watcher that dropped events is current
	// again.
	EventPending = "pending"
	// EventDropped says how many events this watcher missed because it
	// did not read them fast enough.
	EventDropped = "dropped"
)

// IntentRequest is a lifecycle command on the mounted source.
type IntentRequest struct {
	// Action is new, start, block, unblock, complete, archive or scope.
	Action string     `json:"action"`
	ID     string     `json:"id"`
	Reason string     `json:"reason,omitempty"`
	Add    []string   `json:"add,omitempty"`
	Remove []string   `json:"remove,omitempty"`
	New    *NewIntent `json:"new,omitempty"`
	Force  bool       `json:"force,omitempty"`
	// Results are the acceptance checks the CLI ran, for complete.
	Results []AcceptanceResult `json:"results,omitempty"`
}

// NewIntent is what `intentfs intent new` declares.
type NewIntent struct {
	ID                 string
	Name               string
	Scope              []string
	Constraints        []string
	AcceptanceCriteria []string
	Parent             string
	Now                time.Time
}

// AcceptanceResult is one acceptance criterion as the CLI checked it.
type AcceptanceResult struct {
	Text     string  `json:"text"`
	Check    string  `json:"check,omitempty"` // "" for a criterion a human verifies
	Passed   bool    `json:"passed"`
	ExitCode int     `json:"exit_code"`
	Output   string  `json:"output,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// RevertRequest names the recorded changes to undo.
type RevertRequest struct {
	Record string `json:"record,omitempty"`
	Intent string `json:"intent,omitempty"`
	DryRun bool   `json:"dry_run,omitempty"`
	// Force reverts files that changed since their record too.
	Force bool `json:"force,omitempty"`
}

// RevertPlan is what a revert does, step by step.
type RevertPlan struct {
	Steps []RevertStep `json:"steps"`
	// AlreadyReverted counts the changes left out because an earlier
	// revert undid them.
	AlreadyReverted int `json:"already_reverted,omitempty"`
}

// RevertStep undoes one record.
type RevertStep struct {
	Record string `json:"record"` // the record undone
	// Intent is the intent of the record undone: the revert of a change
	// is recorded under the intent that made it.
	Intent string `json:"intent,omitempty"`
	Event  string `json:"event"`
	Action string `json:"action"` // remove, restore, recreate, move-back, rmdir, mkdir, skip
	Path   string `json:"path"`
	To     string `json:"to,omitempty"`
	Hash   string `json:"hash,omitempty"`  // the content restored
	Moved  string `json:"moved,omitempty"` // the content a move-back carries
	// Mode is the mode a recreated file had when it was removed, as its
	// record says ("" when it does not).
	Mode     string `json:"mode,omitempty"`
	Conflict string `json:"conflict,omitempty"`
	Note     string `json:"note,omitempty"`
}

// SessionSpec is an agent session to start (intentfs run).
type SessionSpec struct {
	// Name is a label for people ("" for none).
	Name string `json:"name,omitempty"`
	// User is the account the agent runs as, and Uid/Gid its ids.
	User string `json:"user"`
	Uid  uint32 `json:"uid"`
	Gid  uint32 `json:"gid"`
	// Intent is the intent selected at start ("" for none); Pinned means
	// the session may not select another.
	Intent string `json:"intent,omitempty"`
	Pinned bool   `json:"pinned,omitempty"`
	// Model and Conversation go to every record of the session.
	Model        string `json:"model,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	// Check marks a session that runs acceptance checks: it does not
	// claim its intent, so the agent working on it keeps its claim.
	Check bool `json:"check,omitempty"`
	// RootPid is the session's first process, as the daemon sees it: the
	// init of its pid namespace.
	RootPid int `json:"root_pid"`
}

// SessionInfo describes a live or recently ended agent session.
type SessionInfo struct {
	ID string `json:"id"`
	SessionSpec
	Intent  string     `json:"intent,omitempty"`
	Started time.Time  `json:"started"`
	Ended   *time.Time `json:"ended,omitempty"`
	Live    bool       `json:"live"`
	Changes uint64     `json:"changes"`
	Denials uint64     `json:"denials"`
}

// Pending is a held change or a scope request that waits for a human.
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

// Event is one thing a watcher sees (intentfs watch).
type Event struct {
	// Seq numbers the published events; a gap means events were dropped.
	Seq  uint64    `json:"seq,omitempty"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// Event is the ledger event (create, delete, select, ...).
	Event   string `json:"event,omitempty"`
	Op      string `json:"op,omitempty"`
	Path    string `json:"path,omitempty"`
	Path2   string `json:"path2,omitempty"`
	Intent  string `json:"intent,omitempty"`
	Session string `json:"session,omitempty"`
	Code    string `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Pid     uint32 `json:"pid,omitempty"`
	Uid     uint32 `json:"uid"`
	Comm    string `json:"comm,omitempty"`
	// ID is the pending entry of a held or decided event.
	ID uint64 `json:"id,omitempty"`
	// Verdict and By are a decision's.
	Verdict string `json:"verdict,omitempty"`
	By      string `json:"by,omitempty"`
	// Dropped counts the events missed, on a dropped event.
	Dropped uint64 `json:"dropped,omitempty"`
	// Pending lists what waits, on a pending event.
	Pending []Pending `json:"pending,omitempty"`
}

// AcceptRequest is what `intentfs accept` acknowledges.
type AcceptRequest struct {
	// Paths are workspace-relative.
	Paths  []string `json:"paths"`
	Reason string   `json:"reason,omitempty"`
}

// Accepted is one path as an acceptance recorded it.
type Accepted struct {
	Path string `json:"path"`
	// Hash is the content accepted, "" for a path accepted as absent.
	Hash  string `json:"hash,omitempty"`
	Mode  string `json:"mode,omitempty"`
	Owner string `json:"owner,omitempty"`
}

// UpstreamStatus is the declared upstream as the daemon last fetched it.
type UpstreamStatus struct {
	Configured bool      `json:"configured"`
	URL        string    `json:"url,omitempty"`
	Ref        string    `json:"ref,omitempty"`
	Commit     string    `json:"commit,omitempty"`
	FetchedAt  time.Time `json:"fetched_at,omitzero"`
	// Fetching is set while a fetch is under way or queued.
	Fetching bool `json:"fetching,omitempty"`
	// LastErr is why the last fetch failed, "" after a success.
	LastErr string `json:"last_error,omitempty"`
	// Mirror is the mirror's path.
	Mirror string `json:"mirror"`
	// Fetches counts the fetches started since the mount began.
	Fetches int `json:"fetches"`
}

// ExportStats is the OTLP audit stream's state.
type ExportStats struct {
	// Endpoint is where records go (without credentials); Protocol is
	// http/protobuf or grpc.
	Endpoint string `json:"endpoint"`
	Protocol string `json:"protocol"`
	// Exported counts the records the receiver accepted; Failed those it
	// did not take after retries (down, refusing); Dropped those never
	// sent because the queue was full, or left when the mount ended.
	Exported uint64 `json:"exported"`
	Failed   uint64 `json:"failed"`
	Dropped  uint64 `json:"dropped"`
	// Queued counts the records on their way.
	Queued uint64 `json:"queued"`
	// LastError is the last export's error while exports fail.
	LastError string `json:"last_error,omitempty"`
}

// StoreUsage is the object store's use against its bound.
type StoreUsage struct {
	// Bytes and Objects are what the store holds.
	Bytes   int64 `json:"bytes"`
	Objects int   `json:"objects"`
	// CopiedBytes are the bytes of the objects the daemon copied in,
	// which MaxBytes bounds (the rest were linked from removed files).
	CopiedBytes int64 `json:"copied_bytes"`
	// MaxBytes is the bound (0: none, a store read by the CLI).
	MaxBytes int64 `json:"max_bytes"`
	// AvailBytes is the filesystem's space for unprivileged users
	// (statfs f_bavail), which the daemon never writes past.
	AvailBytes int64 `json:"fs_avail_bytes"`
	// CopiedByUID is what the daemon copied into the store since it
	// started, by the uid whose change needed the copy.
	CopiedByUID map[uint32]int64 `json:"copied_by_uid,omitempty"`
	// Refused counts copies refused since the daemon started.
	Refused int64 `json:"refused"`
}
