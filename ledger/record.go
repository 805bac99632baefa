// Package ledger holds the Agent Trace records intentfs appends for every
// change made through a mount, the single writer that appends them, and the
// readers that query them.
package ledger

import (
	"time"

	"github.com/google/uuid"
)

// SpecVersion is the Agent Trace specification version of every record.
const SpecVersion = "0.1.0"

// MetadataKey is the vendor key under which intentfs puts its governance
// fields in a record's metadata.
const MetadataKey = "dev.intentfs"

// Event names what happened.
type Event string

// Ledger events.
const (
	EventCreate   Event = "create"
	EventWrite    Event = "write"
	EventDelete   Event = "delete"
	EventRename   Event = "rename"
	EventMkdir    Event = "mkdir"
	EventRmdir    Event = "rmdir"
	EventSymlink  Event = "symlink"
	EventLink     Event = "link"
	EventMknod    Event = "mknod"
	EventChmod    Event = "chmod"
	EventChown    Event = "chown"
	EventTruncate Event = "truncate"
	EventUtimes   Event = "utimes"
	EventXattr    Event = "xattr"
	EventDenied   Event = "denied"
	EventSelect   Event = "select"
	// EventTransition is a lifecycle move of an intent (or its creation,
	// from no status); EventScope a change of its owned_scope.
	EventTransition Event = "transition"
	EventScope      Event = "scope"
	EventLesson     Event = "lesson"
	// EventHeader opens every ledger file; EventTorn records that a torn
	// last line (a crash mid-write) was moved aside; EventRevert records an
	// undo.
	EventHeader Event = "header"
	EventTorn   Event = "torn"
	EventRevert Event = "revert"
	// EventLedgerFailed records that the ledger could not commit and
	// changes are refused from then on; EventLedgerRecovered that it can
	// commit again. Both are written into the room the writer keeps
	// reserved for them.
	EventLedgerFailed    Event = "ledger_failed"
	EventLedgerRecovered Event = "ledger_recovered"
	// EventCommit records a commit made in the mount that a branch moved
	// to, with the records that account for its changes.
	EventCommit Event = "commit"
	// EventSessionStart and EventSessionEnd bracket an agent session
	// (intentfs run): who runs it, as whom, under which intent.
	EventSessionStart Event = "session_start"
	EventSessionEnd   Event = "session_end"
	// EventApproval records a human decision on a change an approval rule
	// held or on a scope request (or its timeout), and the filing of a
	// scope request: code APPROVED, DENIED, TIMED_OUT, CANCELLED or
	// REQUESTED; the process is the one that decided or asked.
	EventApproval Event = "approval"
	// EventCheckpoint is a signed checkpoint: the mount's signing keys
	// sign the hash of the line before it, the head of the chain, so
	// every record up to that line is signed (see checkpoint.go).
	EventCheckpoint Event = "checkpoint"
	// EventAccept records that a human acknowledged a path's content as
	// it is now (intentfs accept): a change made outside the mount that
	// the ledger is to take as the human's. post_hash is the content
	// accepted (none: the path is accepted as absent), mode its mode.
	EventAccept Event = "accept"
)

// MutationClass is the kind of change a record makes, coarser than its
// event, so that a reviewer can filter the ledger by what a change was
// (a creation, a refactor, documentation) rather than by the syscall.
type MutationClass string

// Mutation classes.
const (
	ClassCreation  MutationClass = "FILE_CREATION"
	ClassDeletion  MutationClass = "FILE_DELETION"
	ClassRename    MutationClass = "FILE_RENAME"
	ClassEvolution MutationClass = "INTENT_EVOLUTION"
	ClassMetadata  MutationClass = "METADATA"
	// Classes of content changes, from what the change is (attribution)
	// or what the agent declared it to be.
	ClassDocumentation MutationClass = "DOCUMENTATION"
	ClassConfiguration MutationClass = "CONFIGURATION"
	ClassASTRefactor   MutationClass = "AST_REFACTOR"
)

// DeclarableClasses lists the classes an agent may declare for its next
// writes through .intentfs/mutation_class. It returns a new slice each
// time, so no caller can change the list for another.
func DeclarableClasses() []MutationClass {
	return []MutationClass{ClassASTRefactor, ClassEvolution, ClassDocumentation, ClassConfiguration}
}

// ClassOf returns the mutation class of an event, "" for events that are
// not mutations (denied, select).
func ClassOf(e Event) MutationClass {
	switch e {
	case EventCreate, EventMkdir, EventSymlink, EventLink, EventMknod:
		return ClassCreation
	case EventDelete, EventRmdir:
		return ClassDeletion
	case EventRename:
		return ClassRename
	case EventWrite, EventTruncate:
		return ClassEvolution
	case EventChmod, EventChown, EventUtimes, EventXattr:
		return ClassMetadata
	}
	return ""
}

// Record is one line of the ledger: an Agent Trace 0.1.0 record with the
// governance fields under metadata["dev.intentfs"].
type Record struct {
	Version   string   `json:"version"`
	ID        string   `json:"id"`
	Timestamp string   `json:"timestamp"`
	VCS       *VCS     `json:"vcs,omitempty"`
	Tool      Tool     `json:"tool"`
	Files     []File   `json:"files"`
	Metadata  Metadata `json:"metadata"`

	// attribute and complete, if set, run just before the record is
	// written (see Change.Attribute and Change.Finish).
	attribute func() ([]Range, MutationClass)
	complete  func(*Record)
	// seal, if set, completes the record once its place in the chain is
	// known: the hash of the line before it and the chain's id (a
	// checkpoint signs them).
	seal func(prev, prevPublic, chain string)
}

// VCS names the revision the workspace was at.
type VCS struct {
	Type     string `json:"type"`
	Revision string `json:"revision"`
}

// Tool names the program that wrote the record.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// File is one file a record is about.
type File struct {
	Path          string         `json:"path"`
	Conversations []Conversation `json:"conversations"`
}

// Conversation attributes ranges of a file to a contributor.
type Conversation struct {
	Contributor Contributor `json:"contributor"`
	Ranges      []Range     `json:"ranges"`
	Related     []Related   `json:"related,omitempty"`
	// URL links to the conversation that produced the change, when the
	// session that made it named one (intentfs run --conversation).
	URL string `json:"url,omitempty"`
}

// Contributor says who made the change.
type Contributor struct {
	Type string `json:"type"`
	// ModelID names the model, as the session that made the change
	// declared it (intentfs run --model).
	ModelID string `json:"model_id,omitempty"`
}

// Range is a span of lines with the hash of their content.
type Range struct {
	StartLine   int    `json:"start_line"`
	EndLine     int    `json:"end_line"`
	ContentHash string `json:"content_hash,omitempty"`
}

// Related links a conversation to another resource, here the intent.
type Related struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// Metadata holds the vendor fields.
type Metadata struct {
	IntentFS Governance `json:"dev.intentfs"`
}

// Governance is what intentfs records beyond the Agent Trace core.
type Governance struct {
	Event         Event         `json:"event"`
	IntentID      *string       `json:"intent_id"`
	MutationClass MutationClass `json:"mutation_class,omitempty"`
	PreHash       *string       `json:"pre_hash"`
	PostHash      *string       `json:"post_hash"`
	FromPath      string        `json:"from_path,omitempty"`
	// PathB64 and FromPathB64 hold the exact bytes of a path that is not
	// valid UTF-8 (see names.go); the path fields then hold it escaped.
	PathB64         string   `json:"path_b64,omitempty"`
	FromPathB64     string   `json:"from_path_b64,omitempty"`
	ScopeValidation string   `json:"scope_validation,omitempty"`
	Op              string   `json:"op,omitempty"`
	Code            string   `json:"code,omitempty"`
	Reason          string   `json:"reason,omitempty"`
	Mode            string   `json:"mode,omitempty"`
	FromIntent      *string  `json:"from_intent,omitempty"`
	From            string   `json:"from,omitempty"`
	To              string   `json:"to,omitempty"`
	Process         *Process `json:"process,omitempty"`
	// Session names the agent session whose process made the change.
	Session *Session `json:"session,omitempty"`
	// Prev is the sha256 of the previous line's exact bytes (Genesis for
	// the first line of a chain): the hash chain that makes the ledger
	// tamper-evident.
	Prev string `json:"prev"`
	// PrevPublic is the PublicHash of the previous line (Genesis for the
	// first line of a chain): the chain as git notes carry it, with the
	// fields that stay on this machine left out (see PublicForm).
	PrevPublic string `json:"prev_public,omitempty"`
	// Header fields: the chain's id, the source directory, and for a
	// rotated continuation the file that came before.
	Chain       string `json:"chain,omitempty"`
	Source      string `json:"source,omitempty"`
	ContinuesIn string `json:"continues_from,omitempty"`
	// RevertOf names the record a revert undid.
	RevertOf string `json:"revert_of,omitempty"`
	// PreImage says where the pre_hash bytes are kept ("stored", or why
	// not).
	PreImage string `json:"pre_image,omitempty"`
	// Repeats, on a denial summary, is how many more denials like the
	// first of its kind were refused and not recorded one by one.
	Repeats int `json:"repeats,omitempty"`
	// Commit and Records, on a commit record, are the commit's id and the
	// ids of the records that account for what it changed.
	Commit  string   `json:"commit,omitempty"`
	Records []string `json:"records,omitempty"`
	// RestoredFrom, on a content change, says that the new content is not
	// new: it equals an earlier version ("record <id>", or "before
	// intentfs" for the content the ledger found) or a blob of a commit
	// that was not made in the mount ("commit <id>"). git's checkouts,
	// resets and merges write such content; blame does not credit it to
	// the change.
	RestoredFrom string `json:"restored_from,omitempty"`
	// Checkpoint, on a checkpoint record, is the signed head of the chain
	// (see checkpoint.go).
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
}

// Genesis is the prev of the first line of a chain.
const Genesis = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// Process is the process that made a change, as seen at the operation.
type Process struct {
	Pid     uint32   `json:"pid"`
	Uid     uint32   `json:"uid"`
	Gid     uint32   `json:"gid"`
	Comm    string   `json:"comm,omitempty"`
	Cmdline []string `json:"cmdline,omitempty"`
	Exe     string   `json:"exe,omitempty"`
}

// Session is the agent session (intentfs run) a change was made in. Its
// model and conversation go to Agent Trace's own fields (contributor
// model_id, conversation url) and are kept here only on the session's
// start and end records.
type Session struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	User string `json:"user,omitempty"`
	// Model and Conversation are what the session was started with.
	Model        string `json:"model,omitempty"`
	Conversation string `json:"conversation,omitempty"`
}

// ref is the session as a change record names it: its model and
// conversation are in the record's conversation instead.
func (s *Session) ref() *Session {
	if s == nil {
		return nil
	}
	return &Session{ID: s.ID, Name: s.Name, User: s.User}
}

// IntentURN is the related url naming an intent.
func IntentURN(id string) string { return "urn:intentfs:intent:" + id }

// Change describes one event to turn into a record.
type Change struct {
	Event    Event
	Path     string
	FromPath string
	Intent   string
	PreHash  string // "sha256:<hex>" or ""
	PostHash string
	// Lines is the line count of a created or changed text file; 0 for
	// binary files, deletions and non-content events.
	Lines      int
	Validation string
	Op         string
	Code       string
	Reason     string
	Mode       string
	FromIntent string
	// From and To are the statuses of a transition.
	From, To string
	// PreImage says whether the bytes of PreHash were kept.
	PreImage string
	// RevertOf names the record a revert undid.
	RevertOf string
	// Commit, Records and RestoredFrom: see Governance.
	Commit       string
	Records      []string
	RestoredFrom string
	// Ranges, if set, are the changed hunks (else the whole file of Lines
	// lines); Class, if set, overrides the event's mutation class.
	Ranges []Range
	Class  MutationClass
	// Attribute, if set, computes Ranges and Class later, in the writer's
	// goroutine just before the record is encoded: diffing and classifying
	// a change is the costly part of recording it, and this keeps it off
	// the caller's path without reordering the ledger.
	Attribute func() ([]Range, MutationClass)
	// Finish, if set, completes the record in the writer's goroutine just
	// before it is encoded (a removed file's pre_hash is computed there).
	Finish func(*Record)
	// Repeats, on a denial summary, counts the denials it stands for.
	Repeats int
	Process *Process
	// Session is the agent session the change was made in, nil outside
	// any.
	Session *Session
	Time    time.Time
}

// NewRecord builds the record for a change. toolVersion names the intentfs
// build.
func NewRecord(c Change, toolVersion string) *Record {
	ts := c.Time
	if ts.IsZero() {
		ts = time.Now()
	}
	class := ClassOf(c.Event)
	if c.Class != "" && reclassable(c.Event) {
		class = c.Class
	}
	fromShown, fromB64 := encodeName(c.FromPath)
	g := Governance{
		Event:           c.Event,
		MutationClass:   class,
		PreHash:         optional(c.PreHash),
		PostHash:        optional(c.PostHash),
		FromPath:        fromShown,
		FromPathB64:     fromB64,
		ScopeValidation: c.Validation,
		Op:              c.Op,
		Code:            c.Code,
		Reason:          c.Reason,
		Mode:            c.Mode,
		FromIntent:      optional(c.FromIntent),
		PreImage:        c.PreImage,
		RevertOf:        c.RevertOf,
		From:            c.From,
		To:              c.To,
		Process:         c.Process,
		IntentID:        optional(c.Intent),
		Repeats:         c.Repeats,
		Commit:          c.Commit,
		Records:         c.Records,
		RestoredFrom:    c.RestoredFrom,
		Session:         c.Session.ref(),
	}
	if c.Event == EventSessionStart || c.Event == EventSessionEnd {
		g.Session = c.Session
	}
	r := &Record{
		Version:   SpecVersion,
		ID:        uuid.NewString(),
		Timestamp: ts.UTC().Format(time.RFC3339Nano),
		Tool:      Tool{Name: "intentfs", Version: toolVersion},
		Files:     []File{},
		Metadata:  Metadata{IntentFS: g},
	}
	if c.Path != "" {
		conv := Conversation{Contributor: Contributor{Type: "ai"}, Ranges: []Range{}}
		if c.Event == EventAccept {
			conv.Contributor.Type = "human"
		}
		if c.Session != nil {
			conv.Contributor.ModelID = c.Session.Model
			conv.URL = c.Session.Conversation
		}
		switch {
		case c.Ranges != nil:
			conv.Ranges = c.Ranges
		case c.Lines > 0 && c.PostHash != "":
			conv.Ranges = []Range{{StartLine: 1, EndLine: c.Lines, ContentHash: c.PostHash}}
		}
		if c.Intent != "" {
			conv.Related = []Related{{Type: "intent", URL: IntentURN(c.Intent)}}
		}
		shown, b64 := encodeName(c.Path)
		r.Gov().PathB64 = b64
		r.Files = []File{{Path: shown, Conversations: []Conversation{conv}}}
		r.attribute = c.Attribute
	}
	r.complete = c.Finish
	return r
}

// reclassable reports whether an event is a content change whose class
// depends on the change (a rename over a file is one).
func reclassable(e Event) bool { return e == EventWrite || e == EventTruncate || e == EventRename }

// finish runs the deferred parts of a record.
func (r *Record) finish() {
	if r.complete != nil {
		r.complete(r)
		r.complete = nil
	}
	if r.attribute == nil {
		return
	}
	ranges, class := r.attribute()
	r.attribute = nil
	if ranges != nil && len(r.Files) > 0 && len(r.Files[0].Conversations) > 0 {
		r.Files[0].Conversations[0].Ranges = ranges
	}
	if class != "" && reclassable(r.Gov().Event) {
		r.Gov().MutationClass = class
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Gov returns the governance fields of a record.
func (r *Record) Gov() *Governance { return &r.Metadata.IntentFS }

// Path returns the first file path of a record, or "".
func (r *Record) Path() string {
	if len(r.Files) == 0 {
		return ""
	}
	return r.Files[0].Path
}

// Str dereferences an optional string field for display.
func Str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
