package otelexport

import (
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/intentfs/intentfs/ledger"
)

// OCSF File System Activity (class 1001, category 1 System Activity):
// the class every exported record is described in.
const (
	ClassUID     = 1001
	ClassName    = "File System Activity"
	CategoryUID  = 1
	CategoryName = "System Activity"
)

// OCSF File System Activity activity_id values.
const (
	ActivityUnknown       = 0
	ActivityCreate        = 1
	ActivityRead          = 2
	ActivityUpdate        = 3
	ActivityDelete        = 4
	ActivityRename        = 5
	ActivitySetAttributes = 6
	ActivitySetSecurity   = 7
	ActivityOther         = 99
)

// activityName is OCSF's caption of an activity_id.
func activityName(id int) string {
	switch id {
	case ActivityCreate:
		return "Create"
	case ActivityRead:
		return "Read"
	case ActivityUpdate:
		return "Update"
	case ActivityDelete:
		return "Delete"
	case ActivityRename:
		return "Rename"
	case ActivitySetAttributes:
		return "Set Attributes"
	case ActivitySetSecurity:
		return "Set Security"
	case ActivityOther:
		return "Other"
	}
	return "Unknown"
}

// OCSF status_id and disposition_id values.
const (
	statusSuccess      = 1
	statusFailure      = 2
	dispositionAllowed = 1
	dispositionBlocked = 2
	severityInfo       = 1
	severityLow        = 2
	severityHigh       = 4
)

// Activity returns the OCSF activity of a ledger record: what it did to
// the file, judged by its effect. A refusal is the activity that was
// refused (its op); a revert is the change the undo made. Records that
// are not changes to a file (a selection, a session, the ledger's own
// header, a checkpoint, an accept) are Other.
func Activity(r *ledger.Record) int {
	g := r.Gov()
	switch g.Event {
	case ledger.EventCreate, ledger.EventMkdir, ledger.EventSymlink, ledger.EventLink, ledger.EventMknod:
		return ActivityCreate
	case ledger.EventWrite, ledger.EventTruncate:
		return ActivityUpdate
	case ledger.EventDelete, ledger.EventRmdir:
		return ActivityDelete
	case ledger.EventRename:
		return ActivityRename
	case ledger.EventUtimes, ledger.EventXattr:
		return ActivitySetAttributes
	case ledger.EventChmod, ledger.EventChown:
		return ActivitySetSecurity
	case ledger.EventDenied:
		return activityOfOp(g.Op)
	case ledger.EventRevert:
		switch {
		case g.FromPath != "":
			return ActivityRename // a move back
		case g.PostHash == nil:
			return ActivityDelete // a created file removed
		}
		return ActivityUpdate // content restored or a file recreated
	}
	return ActivityOther
}

// activityOfOp is the activity a refused operation would have been.
func activityOfOp(op string) int {
	switch op {
	case "create", "mkdir", "mknod", "symlink", "link":
		return ActivityCreate
	case "open_write", "truncate", "fallocate", "copy_file_range":
		return ActivityUpdate
	case "unlink", "rmdir":
		return ActivityDelete
	case "rename":
		return ActivityRename
	case "utimes", "setxattr", "removexattr", "setattr":
		return ActivitySetAttributes
	case "chmod", "chown":
		return ActivitySetSecurity
	}
	return ActivityOther
}

// isFileActivity reports whether a record is a change, or a refused
// change, to a file: the records that carry a disposition.
func isFileActivity(r *ledger.Record) bool {
	e := r.Gov().Event
	return ledger.ClassOf(e) != "" || e == ledger.EventDenied || e == ledger.EventRevert
}

// failed reports whether a record says something did not happen.
func failed(e ledger.Event) bool {
	return e == ledger.EventDenied || e == ledger.EventLedgerFailed || e == ledger.EventTorn
}

// Fields says which of a record's fields may leave the machine.
type Fields struct {
	// Cmdline exports the process's command line and executable. Off by
	// default: arguments carry what an agent was told to do, file names
	// outside the workspace, sometimes secrets.
	Cmdline bool
}

// LogRecord turns a ledger record into the OTLP log record exported for
// it: OCSF File System Activity attributes and intentfs's own. Every
// string is made valid UTF-8 (OTLP requires it; a ledger reason may hold
// any bytes).
func LogRecord(r *ledger.Record, f Fields) log.Record {
	g := r.Gov()
	var rec log.Record
	if ts, err := time.Parse(time.RFC3339Nano, r.Timestamp); err == nil {
		rec.SetTimestamp(ts)
	}
	rec.SetObservedTimestamp(time.Now())
	rec.SetEventName("intentfs.ledger.record")
	sev, sevText, ocsfSev := log.SeverityInfo, "INFO", severityInfo
	switch {
	case g.Event == ledger.EventLedgerFailed:
		sev, sevText, ocsfSev = log.SeverityError, "ERROR", severityHigh
	case failed(g.Event):
		sev, sevText, ocsfSev = log.SeverityWarn, "WARN", severityLow
	}
	rec.SetSeverity(sev)
	rec.SetSeverityText(sevText)
	rec.SetBody(attribute.StringValue(valid(body(r))))

	act := Activity(r)
	kv := []attribute.KeyValue{
		attribute.Int("class_uid", ClassUID),
		attribute.String("class_name", ClassName),
		attribute.Int("category_uid", CategoryUID),
		attribute.String("category_name", CategoryName),
		attribute.Int("activity_id", act),
		attribute.String("activity_name", activityName(act)),
		attribute.Int("type_uid", ClassUID*100+act),
		attribute.Int("severity_id", ocsfSev),
		attribute.String("metadata.uid", valid(r.ID)),
		attribute.String("metadata.product.name", "intentfs"),
		attribute.String("metadata.product.version", valid(r.Tool.Version)),
		attribute.String("intentfs.event", valid(string(g.Event))),
	}
	status, statusID := "Success", statusSuccess
	if failed(g.Event) {
		status, statusID = "Failure", statusFailure
	}
	kv = append(kv, attribute.Int("status_id", statusID), attribute.String("status", status))
	if g.Code != "" {
		kv = append(kv, attribute.String("status_code", valid(g.Code)), attribute.String("intentfs.code", valid(g.Code)))
	}
	if g.Reason != "" {
		kv = append(kv, attribute.String("status_detail", valid(g.Reason)))
	}
	if isFileActivity(r) {
		disp, dispID := "Allowed", dispositionAllowed
		if g.Event == ledger.EventDenied {
			disp, dispID = "Blocked", dispositionBlocked
		}
		kv = append(kv, attribute.Int("disposition_id", dispID), attribute.String("disposition", disp))
	}
	kv = append(kv, fileAttributes(r)...)
	kv = append(kv, actorAttributes(g, f)...)
	opt := func(k, v string) {
		if v != "" {
			kv = append(kv, attribute.String(k, valid(v)))
		}
	}
	opt("intentfs.intent", ledger.Str(g.IntentID))
	opt("intentfs.from_intent", ledger.Str(g.FromIntent))
	if g.Session != nil {
		opt("intentfs.session", g.Session.ID)
		opt("intentfs.session.name", g.Session.Name)
	}
	opt("intentfs.op", g.Op)
	opt("intentfs.mutation_class", string(g.MutationClass))
	opt("intentfs.scope_validation", g.ScopeValidation)
	opt("intentfs.mode", g.Mode)
	opt("intentfs.restored_from", g.RestoredFrom)
	opt("intentfs.revert_of", g.RevertOf)
	opt("intentfs.commit", g.Commit)
	// The link to the line before is its public hash: the full line's
	// hash would let a reader confirm a guess of what the stream leaves
	// out (a command line).
	opt("intentfs.prev_public", g.PrevPublic)
	if r.VCS != nil {
		opt("intentfs.vcs.revision", r.VCS.Revision)
	}
	if g.Repeats > 0 {
		kv = append(kv, attribute.Int("count", g.Repeats+1))
	}
	if len(r.Files) > 0 && len(r.Files[0].Conversations) > 0 {
		opt("intentfs.model", r.Files[0].Conversations[0].Contributor.ModelID)
	}
	rec.AddAttributes(kv...)
	return rec
}

// fileAttributes are OCSF's file (the file before the activity: its
// path and content hash) and file_result (after it).
func fileAttributes(r *ledger.Record) []attribute.KeyValue {
	g := r.Gov()
	path := r.Path()
	if path == "" {
		return nil
	}
	before, after := path, path
	if g.FromPath != "" {
		before = g.FromPath
	}
	kv := []attribute.KeyValue{attribute.String("file.path", valid(before)), attribute.String("file.name", valid(baseName(before)))}
	if h := ledger.Str(g.PreHash); h != "" {
		kv = append(kv, hashes("file.hashes", h))
	}
	if Activity(r) == ActivityDelete && g.Event != ledger.EventDenied {
		return kv
	}
	kv = append(kv, attribute.String("file_result.path", valid(after)), attribute.String("file_result.name", valid(baseName(after))))
	if h := ledger.Str(g.PostHash); h != "" {
		kv = append(kv, hashes("file_result.hashes", h))
	}
	return kv
}

// hashes is an OCSF fingerprint list holding one "sha256:<hex>" hash.
func hashes(key, h string) attribute.KeyValue {
	alg, value, ok := strings.Cut(h, ":")
	if !ok || alg != "sha256" {
		return attribute.Slice(key, attribute.MapValue(attribute.Int("algorithm_id", 99),
			attribute.String("algorithm", "Other"), attribute.String("value", valid(h))))
	}
	return attribute.Slice(key, attribute.MapValue(attribute.Int("algorithm_id", 3),
		attribute.String("algorithm", "SHA-256"), attribute.String("value", valid(value))))
}

// actorAttributes are OCSF's actor: the process that made the change and
// its user.
func actorAttributes(g *ledger.Governance, f Fields) []attribute.KeyValue {
	p := g.Process
	if p == nil {
		return nil
	}
	kv := []attribute.KeyValue{
		attribute.Int64("actor.process.pid", int64(p.Pid)),
		attribute.String("actor.user.uid", strconv.FormatUint(uint64(p.Uid), 10)),
	}
	if p.Comm != "" {
		kv = append(kv, attribute.String("actor.process.name", valid(p.Comm)))
	}
	if g.Session != nil && g.Session.User != "" {
		kv = append(kv, attribute.String("actor.user.name", valid(g.Session.User)))
	}
	if f.Cmdline {
		if len(p.Cmdline) > 0 {
			kv = append(kv, attribute.String("actor.process.cmd_line", valid(strings.Join(p.Cmdline, " "))))
		}
		if p.Exe != "" {
			kv = append(kv, attribute.String("actor.process.file.path", valid(p.Exe)))
		}
	}
	return kv
}

// body is the record in one line, as a person reads it in a log viewer.
func body(r *ledger.Record) string {
	g := r.Gov()
	var b strings.Builder
	b.WriteString(string(g.Event))
	if g.Event == ledger.EventDenied && g.Op != "" {
		b.WriteString(" " + g.Op)
	}
	if p := r.Path(); p != "" {
		if g.FromPath != "" {
			b.WriteString(" " + g.FromPath + " ->")
		}
		b.WriteString(" " + p)
	}
	if id := ledger.Str(g.IntentID); id != "" {
		b.WriteString(" (" + id + ")")
	}
	if g.Code != "" {
		b.WriteString(": " + g.Code)
	}
	return b.String()
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// valid makes s valid UTF-8, as OTLP's strings must be.
func valid(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
