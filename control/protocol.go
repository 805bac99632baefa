// Package control is how people and agents talk to a running mount: a
// Unix socket per mount for the CLI, a registry through which the CLI finds
// mounts, and the virtual .intentfs/ directory inside the mount.
package control

import (
	"time"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Backend is what the control plane drives: the daemon.
type Backend interface {
	// Select makes id the active intent ("" deselects), with the rules of
	// `intentfs select`; by is who asked.
	Select(id string, by *ledger.Process) error
	// Active returns the intent in force for by ("" for none): its
	// session's inside a session, the mount's otherwise (and for nil).
	Active(by *ledger.Process) string
	// Status describes the mount.
	Status() Status
	// Denials returns recent denials, oldest first: inside a session,
	// the session's own; otherwise (and for nil) all of them.
	Denials(by *ledger.Process) []Denial
	// InvalidControlWrite records garbage written to a control file.
	InvalidControlWrite(file string, data []byte, err error, by *ledger.Process)
	// Unmount ends the mount; it returns once the ledger is flushed.
	Unmount() error
	// IntentOp carries out a lifecycle command on the mounted source.
	IntentOp(r IntentRequest, by *ledger.Process) error
	// Context returns the context block of intent id ("" for the one in
	// force for by).
	Context(id string, by *ledger.Process) ([]byte, error)
	// Lesson records a lesson of the active intent.
	Lesson(text string, by *ledger.Process) error
	// IntentList describes the intents, one line each, for agents; the
	// one in force for by is marked.
	IntentList(by *ledger.Process) []byte
	// DeclareClass sets the mutation class of the agent's next writes
	// ("" to stop declaring).
	DeclareClass(class string, by *ledger.Process) error
	// DeclaredClass returns the declared class.
	DeclaredClass() ledger.MutationClass
	// Revert undoes recorded changes in the source.
	Revert(r RevertRequest, by *ledger.Process) (*RevertPlan, int, error)
	// DryRun decides, as a dry run, whether op on the workspace-relative
	// path would be allowed now for by ("" op: open_write). Nothing is
	// recorded.
	DryRun(path, op string, by *ledger.Process) (DryRunResult, error)
	// StartSession registers an agent session (intentfs run) whose root
	// process is spec.RootPid.
	StartSession(spec SessionSpec, by *ledger.Process) (SessionInfo, error)
	// Sessions lists the live sessions, then the recently ended ones.
	Sessions() []SessionInfo
	// IntentInfo returns intent id's name and status ("" if unknown).
	IntentInfo(id string) (name, status string)
	// SessionOf returns the id of the live session by's process belongs
	// to, "" for none.
	SessionOf(by *ledger.Process) string
	// Approvals lists what waits for a human, and the recent decisions.
	Approvals() ([]Pending, []Decision)
	// DecideApproval approves or denies a pending entry; by is who decided.
	DecideApproval(r DecideRequest, by *ledger.Process) ([]Decision, error)
	// RequestScope files an agent's request to add paths to the intent
	// in force for by's process.
	RequestScope(paths []string, why string, by *ledger.Process) (uint64, error)
	// Watch subscribes to the mount's events, each as a watcher is shown
	// it (a dropped event first when some were lost); cancel ends it.
	Watch() (events <-chan Event, cancel func(), err error)
	// Accept records a human's acknowledgement of paths as they are now
	// in the source; by is who accepts, refused inside a session.
	Accept(r AcceptRequest, by *ledger.Process) ([]Accepted, error)
	// Settle records what the mount's writers have written and not yet
	// recorded, and returns once the ledger holds every record on disk:
	// a command that reads the ledger file (log, verify, diff, blame)
	// asks first, so it sees every change made before it ran.
	Settle() error
}

// SettleWait bounds how long a reader of the ledger waits for the
// daemon's answer to a settle request: a wedged daemon must not keep a
// human from the ledger.
const SettleWait = 5 * time.Second

// DecideRequest is a human's decision on a pending entry.
type DecideRequest struct {
	ID uint64 `json:"id"`
	// Verdict is VerdictApproved or VerdictDenied.
	Verdict string `json:"verdict"`
	// For also decides the same rule's further changes by the same
	// process for that long; ForProcess for as long as it lives.
	For        time.Duration `json:"for,omitempty"`
	ForProcess bool          `json:"for_process,omitempty"`
	Reason     string        `json:"reason,omitempty"`
}

// Denial is one refused change.
type Denial struct {
	Time    time.Time       `json:"time"`
	Op      string          `json:"op"`
	Path    string          `json:"path"`
	Path2   string          `json:"path2,omitempty"`
	Intent  string          `json:"intent,omitempty"`
	Session string          `json:"session,omitempty"`
	Code    string          `json:"code"`
	Reason  string          `json:"reason"`
	Process *ledger.Process `json:"process,omitempty"`
	// Repeats counts the further refusals of the same save this line
	// stands for: the same process, operation and directory, within a
	// second.
	Repeats int `json:"repeats,omitempty"`
}

// Counters are the mount's running totals.
type Counters struct {
	Allowed  uint64 `json:"allowed"`
	Denied   uint64 `json:"denied"`
	Recorded uint64 `json:"recorded"`
	// WouldDeny counts the changes made in observe mode that the policy
	// refuses (recorded with scope_validation FAIL); WouldHold those an
	// approval rule would have held.
	WouldDeny     uint64 `json:"would_deny"`
	WouldHold     uint64 `json:"would_hold"`
	BytesHashed   uint64 `json:"bytes_hashed"`
	HashCacheHits uint64 `json:"hash_cache_hits"`
}

// IntentEnforcement is the mode in force for changes under one intent.
type IntentEnforcement struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Enforcement string `json:"enforcement"`
}

// MaxIntentEnforcement bounds the intents Status lists modes for.
const MaxIntentEnforcement = 100

// Status is what `intentfs status` and .intentfs/status report.
type Status struct {
	Mountpoint   string    `json:"mountpoint"`
	Source       string    `json:"source"`
	Pid          int       `json:"pid"`
	Version      string    `json:"version"`
	StartedAt    time.Time `json:"started_at"`
	ActiveIntent string    `json:"active_intent"`
	IntentName   string    `json:"intent_name,omitempty"`
	IntentStatus string    `json:"intent_status,omitempty"`
	FailOpen     bool      `json:"fail_open"`
	// Enforcement is the mode in force for the active intent: enforce,
	// or observe (refusals are recorded, not made).
	Enforcement string `json:"enforcement"`
	// WorkspaceEnforcement is the policy's default mode; IntentEnforcement
	// the mode in force for each intent (its own, else the default), so
	// that sessions pinned to intents show theirs when none is selected.
	WorkspaceEnforcement string              `json:"workspace_enforcement"`
	IntentEnforcement    []IntentEnforcement `json:"intent_enforcement,omitempty"`
	Passthrough          bool                `json:"passthrough"`
	// Transport is how the kernel's FUSE requests reach the daemon:
	// "uring" (FUSE over io_uring) or "dev" (/dev/fuse).
	Transport string `json:"transport"`
	// DataPath is how reads and writes of existing files reach the
	// source: "passthrough" (every open decided at OPEN) or "cached" (no
	// OPEN; changes decided at the requests that make them).
	DataPath string `json:"data_path"`
	// SourceWatched: changes made directly in the source are seen at
	// once, so the kernel may keep entries and attributes for
	// CacheSeconds; without the watch, such a change shows within
	// CacheSeconds.
	SourceWatched bool               `json:"source_watched"`
	CacheSeconds  float64            `json:"cache_timeout_seconds"`
	LedgerPath    string             `json:"ledger_path"`
	Ledger        ledger.WriterStats `json:"ledger"`
	Policy        policy.EngineState `json:"policy"`
	Counters      Counters           `json:"counters"`
	// Ops counts FUSE requests by opcode.
	Ops           map[string]uint64 `json:"fuse_requests"`
	RecentDenials []Denial          `json:"recent_denials"`
	// OpenWriters are the files open for writing through the mount, with
	// the intent each handle's changes are recorded under.
	OpenWriters []OpenWriter `json:"open_writers,omitempty"`
	// Waiting counts the held changes and scope requests that wait for a
	// human (intentfs approvals lists them).
	Waiting int `json:"waiting_for_approval"`
	// Sessions are the live agent sessions, then the recently ended.
	Sessions []SessionInfo `json:"sessions,omitempty"`
	// Upstream is the declared upstream the mount's git may bring in
	// outside the scope, as the daemon last fetched it.
	Upstream UpstreamStatus `json:"upstream"`
	// Signing says whether the ledger is signed (intentfs mount
	// --signing-key) and with which keys.
	Signing Signing `json:"signing"`
	// Session, when a session's process reads .intentfs/status, is that
	// session: ActiveIntent is then the session's.
	Session *SessionInfo `json:"session,omitempty"`
	// FilePermissions are the places in each live session's scope that
	// the source's own owner, mode or ACL keep the session's uid from
	// changing: refusals the kernel makes before intentfs sees them, so
	// they never appear among the denials.
	FilePermissions []PermissionProblem `json:"file_permissions,omitempty"`
	// Store is the object store's use against its bound.
	Store StoreUsage `json:"object_store"`
	// Export is the OTLP audit stream's state, when one is configured:
	// where it goes and how many records were exported, failed or
	// dropped.
	Export *ExportStats `json:"export,omitempty"`
}

// PermissionProblem is a part of an intent's scope that a session's uid
// may not change because of the source's own permissions.
type PermissionProblem struct {
	Session string `json:"session"`
	Uid     uint32 `json:"uid"`
	Intent  string `json:"intent"`
	// Path is the scope's file or directory that was asked about.
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// OpenWriter is a file open for writing. A handle keeps the intent it was
// opened under until it is closed: selecting another intent does not move
// its changes to the new one.
type OpenWriter struct {
	Path   string `json:"path"`
	Intent string `json:"intent"`
	Pid    uint32 `json:"pid"`
}

// HeldBy returns the writers whose changes are recorded under an intent
// other than id (exempt handles, with no intent, are left out).
func (s Status) HeldBy(id string) []OpenWriter {
	var out []OpenWriter
	for _, w := range s.OpenWriters {
		if w.Intent != "" && w.Intent != id {
			out = append(out, w)
		}
	}
	return out
}

// Request is one CLI command over the socket.
type Request struct {
	// Op is status, denials, select, unmount, intent, context, lesson,
	// revert, check, approvals, decide, accept, settle or watch.
	Op     string `json:"op"`
	Intent string `json:"intent,omitempty"`
	// IntentOp is the lifecycle command of Op "intent".
	IntentOp *IntentRequest `json:"intent_op,omitempty"`
	// Text is the lesson of Op "lesson".
	Text string `json:"text,omitempty"`
	// Revert is the request of Op "revert".
	Revert *RevertRequest `json:"revert,omitempty"`
	// Path and DryRunOp are the question of Op "check".
	Path     string `json:"path,omitempty"`
	DryRunOp string `json:"check_op,omitempty"`
	// User names the human who ran the CLI, for the ledger.
	User string `json:"user,omitempty"`
	// Session is the session of Op "session_start".
	Session *SessionSpec `json:"session,omitempty"`
	// Decide is the decision of Op "decide".
	Decide *DecideRequest `json:"decide,omitempty"`
	// Accept is what Op "accept" acknowledges.
	Accept *AcceptRequest `json:"accept,omitempty"`
}

// Response answers a Request.
type Response struct {
	OK      bool          `json:"ok"`
	Error   string        `json:"error,omitempty"`
	Status  *Status       `json:"status,omitempty"`
	Denials []Denial      `json:"denials,omitempty"`
	Context string        `json:"context,omitempty"`
	Plan    *RevertPlan   `json:"plan,omitempty"`
	Applied int           `json:"applied,omitempty"`
	DryRun  *DryRunResult `json:"check,omitempty"`
	// Sessions answers "sessions"; Session answers "session_start".
	Sessions []SessionInfo `json:"sessions,omitempty"`
	Session  *SessionInfo  `json:"session_info,omitempty"`
	// Pending and Decisions answer Op "approvals" (what waits, the recent
	// decisions) and Op "decide" (the decisions made).
	Pending   []Pending  `json:"pending,omitempty"`
	Decisions []Decision `json:"decisions,omitempty"`
	// Accepted answers Op "accept": each path as recorded.
	Accepted []Accepted `json:"accepted,omitempty"`
}
