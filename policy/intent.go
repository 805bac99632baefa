// Package policy holds the intents model, its validation, scope and ignore
// matching, and the single function that decides whether a change to the
// workspace is allowed.
package policy

import "regexp"

// Status is where an intent is in its lifecycle.
type Status string

// The lifecycle states of an intent.
const (
	StatusPending    Status = "PENDING"
	StatusInProgress Status = "IN_PROGRESS"
	StatusComplete   Status = "COMPLETE"
	StatusBlocked    Status = "BLOCKED"
	StatusArchived   Status = "ARCHIVED"
)

// Statuses lists every status, in lifecycle order; a new slice each call.
func Statuses() []Status {
	return []Status{StatusPending, StatusInProgress, StatusComplete, StatusBlocked, StatusArchived}
}

// Valid reports whether s is one of the lifecycle states.
func (s Status) Valid() bool {
	for _, v := range Statuses() {
		if v == s {
			return true
		}
	}
	return false
}

// RelatedSpecTypes lists the types a related_specs entry may have; a new slice each call.
func RelatedSpecTypes() []string {
	return []string{"speckit", "github_issue", "github_pr", "constitution", "external"}
}

// idPattern is the intent id syntax: capital letters, a dash and at least
// three digits (INT-001), so an id reads the same in the policy, the
// ledger and a commit's notes, and never holds a path separator or space.
var idPattern = regexp.MustCompile(`^[A-Z]+-\d{3,}$`)

// ValidID reports whether id has the intent id syntax (e.g. INT-001).
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Intent is one unit of work declared by a human.
type Intent struct {
	ID                 string
	Name               string
	Status             Status
	Version            int
	OwnedScope         []string
	Constraints        []string
	AcceptanceCriteria []Criterion
	RelatedSpecs       []RelatedSpec
	ParentIntent       string
	Tags               []string
	CreatedAt          string
	UpdatedAt          string
	// Shared lets several agent sessions hold the intent at once; without
	// it an IN_PROGRESS intent is held by one session at a time.
	Shared bool
	// OnStale says what happens when a session writes a file that changed
	// since it read it: deny (the default) or record.
	OnStale OnStale
	// Approvals are the intent's own approval rules (see ApprovalRule).
	Approvals []*ApprovalRule
	// Enforcement, if set, overrides the workspace's for this intent.
	Enforcement Enforcement

	// Line is where the intent starts in the policy file, for messages.
	Line int
	// scopeLines maps each owned_scope item to its line, for messages.
	scopeLines map[int]int
	scope      scopeSet
}

// OnStale is what a write to a stale file does.
type OnStale string

// What a stale write does.
const (
	StaleDeny   OnStale = "deny"
	StaleRecord OnStale = "record"
)

// Criterion is an acceptance criterion: its text, and optionally a shell
// command that checks it (run in the mount by `intentfs intent complete`).
type Criterion struct {
	Text  string `json:"text"`
	Check string `json:"check,omitempty"`
}

// RelatedSpec points at a specification the intent implements.
type RelatedSpec struct {
	Type string
	Ref  string
}

// InScope reports whether the workspace-relative path rel is covered by the
// intent's owned_scope.
func (in *Intent) InScope(rel string) bool { return in.scope.matches(rel) }

// Intents is a loaded, validated policy file.
type Intents struct {
	// File is the path the intents were read from, for messages.
	File string
	List []*Intent
	// Approvals are the workspace's approval rules, which cover changes
	// under every intent.
	Approvals []*ApprovalRule
	// Upstream is the trusted upstream repository and ref, or nil when
	// the policy declares none.
	Upstream *Upstream
	// Enforcement is the workspace's enforcement mode ("" is enforce).
	Enforcement Enforcement
	// Notes says what the git notes carry beyond what attribution needs.
	Notes Notes
	byID  map[string]*Intent
	// hasApprovals is set when any rule exists, here or in an intent.
	hasApprovals bool
}

// Get returns the intent with the given id, or nil.
func (p *Intents) Get(id string) *Intent {
	if p == nil {
		return nil
	}
	return p.byID[id]
}

// NotesInclude returns the extra fields the notes carry (none for a nil
// policy: when in doubt, the notes carry the least).
func (p *Intents) NotesInclude() []string {
	if p == nil {
		return nil
	}
	return p.Notes.Include
}

// Notes is the policy's notes: section: the record fields the git notes
// carry to every remote beyond what attribution needs. The local ledger
// keeps every field whatever it says.
type Notes struct {
	// Include names the extra fields (NotesIncludes lists them).
	Include []string
}

// NotesIncludes lists the fields notes.include may name: the process's
// command line, a header's absolute source directory, the process's uid
// and gid, and the program's absolute path (else its base name).
func NotesIncludes() []string { return []string{"cmdline", "source", "uids", "exe"} }
