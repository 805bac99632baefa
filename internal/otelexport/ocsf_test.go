package otelexport

import (
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/intentfs/intentfs/ledger"
)

// attrs flattens a log record's attributes: scalars as their string,
// the hash lists as the hash's value.
func attrs(rec log.Record) map[string]string {
	out := map[string]string{}
	rec.WalkAttributes(func(kv attribute.KeyValue) bool {
		v := kv.Value
		if v.Type() == attribute.SLICE {
			for _, el := range v.AsSlice() {
				for _, f := range el.AsMap() {
					out[string(kv.Key)+"."+string(f.Key)] = f.Value.String()
				}
			}
			return true
		}
		out[string(kv.Key)] = v.String()
		return true
	})
	return out
}

func TestActivityOfEveryEvent(t *testing.T) {
	want := map[ledger.Event]int{
		ledger.EventCreate: ActivityCreate, ledger.EventMkdir: ActivityCreate, ledger.EventSymlink: ActivityCreate,
		ledger.EventLink: ActivityCreate, ledger.EventMknod: ActivityCreate,
		ledger.EventWrite: ActivityUpdate, ledger.EventTruncate: ActivityUpdate,
		ledger.EventDelete: ActivityDelete, ledger.EventRmdir: ActivityDelete,
		ledger.EventRename: ActivityRename,
		ledger.EventUtimes: ActivitySetAttributes, ledger.EventXattr: ActivitySetAttributes,
		ledger.EventChmod: ActivitySetSecurity, ledger.EventChown: ActivitySetSecurity,
		// A denial is the activity of its op (tested below); without one,
		// Other.
		ledger.EventDenied: ActivityOther,
		// A revert with a post_hash restores content.
		ledger.EventRevert: ActivityUpdate,
		ledger.EventSelect: ActivityOther, ledger.EventTransition: ActivityOther, ledger.EventScope: ActivityOther,
		ledger.EventLesson: ActivityOther, ledger.EventCommit: ActivityOther, ledger.EventHeader: ActivityOther,
		ledger.EventTorn: ActivityOther, ledger.EventLedgerFailed: ActivityOther, ledger.EventLedgerRecovered: ActivityOther,
		ledger.EventSessionStart: ActivityOther, ledger.EventSessionEnd: ActivityOther, ledger.EventApproval: ActivityOther,
		// A checkpoint signs the chain; an accept is a person's
		// acknowledgement of a change made elsewhere, not a change.
		ledger.EventCheckpoint: ActivityOther, ledger.EventAccept: ActivityOther,
	}
	for _, ev := range ledger.KnownEvents() {
		w, ok := want[ev]
		if !ok {
			t.Errorf("event %q has no expected OCSF activity: add it to this table and to Activity", ev)
			continue
		}
		r := ledger.NewRecord(ledger.Change{Event: ev, Path: "src/a.go", PostHash: "sha256:ab"}, "t")
		if got := Activity(r); got != w {
			t.Errorf("Activity(%s) = %d (%s), want %d (%s)", ev, got, activityName(got), w, activityName(w))
		}
	}
}

func TestActivity(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    ledger.Change
		want int
	}{
		{"denied open for writing", ledger.Change{Event: ledger.EventDenied, Op: "open_write"}, ActivityUpdate},
		{"denied create", ledger.Change{Event: ledger.EventDenied, Op: "create"}, ActivityCreate},
		{"denied unlink", ledger.Change{Event: ledger.EventDenied, Op: "unlink"}, ActivityDelete},
		{"denied rmdir", ledger.Change{Event: ledger.EventDenied, Op: "rmdir"}, ActivityDelete},
		{"denied rename", ledger.Change{Event: ledger.EventDenied, Op: "rename"}, ActivityRename},
		{"denied chmod", ledger.Change{Event: ledger.EventDenied, Op: "chmod"}, ActivitySetSecurity},
		{"denied setxattr", ledger.Change{Event: ledger.EventDenied, Op: "setxattr"}, ActivitySetAttributes},
		{"denied truncate", ledger.Change{Event: ledger.EventDenied, Op: "truncate"}, ActivityUpdate},
		{"denied select", ledger.Change{Event: ledger.EventDenied, Op: "select"}, ActivityOther},
		{"revert moving back", ledger.Change{Event: ledger.EventRevert, Path: "a", FromPath: "b", PostHash: "sha256:1"}, ActivityRename},
		{"revert removing a creation", ledger.Change{Event: ledger.EventRevert, Path: "a"}, ActivityDelete},
		{"revert restoring", ledger.Change{Event: ledger.EventRevert, Path: "a", PostHash: "sha256:1"}, ActivityUpdate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Activity(ledger.NewRecord(tc.c, "t")); got != tc.want {
				t.Errorf("Activity = %d (%s), want %d (%s)", got, activityName(got), tc.want, activityName(tc.want))
			}
		})
	}
}

func TestLogRecordAttributes(t *testing.T) {
	proc := &ledger.Process{Pid: 42, Uid: 1000, Gid: 1000, Comm: "sed", Cmdline: []string{"sed", "-i", "s/password=hunter2//", "a.txt"}, Exe: "/usr/bin/sed"}
	sess := &ledger.Session{ID: "3f2a9c1e", Name: "refactor", User: "agent"}
	for _, tc := range []struct {
		name   string
		c      ledger.Change
		fields Fields
		want   map[string]string
		absent []string
	}{
		{
			name: "a write",
			c: ledger.Change{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PreHash: "sha256:aa", PostHash: "sha256:bb",
				Validation: "PASS", Op: "release", Process: proc, Session: sess},
			want: map[string]string{"class_uid": "1001", "class_name": "File System Activity", "category_uid": "1",
				"activity_id": "3", "activity_name": "Update", "type_uid": "100103", "status": "Success", "status_id": "1",
				"disposition": "Allowed", "file.path": "src/a.go", "file.name": "a.go", "file.hashes.value": "aa",
				"file.hashes.algorithm": "SHA-256", "file_result.path": "src/a.go", "file_result.hashes.value": "bb",
				"actor.process.pid": "42", "actor.process.name": "sed", "actor.user.uid": "1000", "actor.user.name": "agent",
				"intentfs.intent": "INT-001", "intentfs.session": "3f2a9c1e", "intentfs.event": "write",
				"intentfs.scope_validation": "PASS", "intentfs.mutation_class": "INTENT_EVOLUTION"},
			absent: []string{"actor.process.cmd_line", "actor.process.file.path", "intentfs.code", "status_code", "intentfs.prev"},
		},
		{
			name:   "a write with the command line asked for",
			c:      ledger.Change{Event: ledger.EventWrite, Path: "a.txt", Process: proc},
			fields: Fields{Cmdline: true},
			want:   map[string]string{"actor.process.cmd_line": "sed -i s/password=hunter2// a.txt", "actor.process.file.path": "/usr/bin/sed"},
		},
		{
			name: "a denial",
			c: ledger.Change{Event: ledger.EventDenied, Path: "docs/x.md", Intent: "INT-001", Op: "open_write", Code: "OUT_OF_SCOPE",
				Reason: "docs/x.md is outside INT-001's owned_scope", Validation: "FAIL", Process: proc},
			want: map[string]string{"activity_id": "3", "status": "Failure", "status_id": "2", "status_code": "OUT_OF_SCOPE",
				"intentfs.code": "OUT_OF_SCOPE", "status_detail": "docs/x.md is outside INT-001's owned_scope",
				"disposition": "Blocked", "disposition_id": "2", "file.path": "docs/x.md", "intentfs.scope_validation": "FAIL"},
		},
		{
			name: "a rename",
			c:    ledger.Change{Event: ledger.EventRename, Path: "src/b.go", FromPath: "src/a.go", PostHash: "sha256:cc"},
			want: map[string]string{"activity_name": "Rename", "file.path": "src/a.go", "file_result.path": "src/b.go", "file_result.hashes.value": "cc"},
		},
		{
			name:   "a delete",
			c:      ledger.Change{Event: ledger.EventDelete, Path: "src/a.go", PreHash: "sha256:dd"},
			want:   map[string]string{"activity_name": "Delete", "file.path": "src/a.go", "file.hashes.value": "dd"},
			absent: []string{"file_result.path"},
		},
		{
			name:   "a selection",
			c:      ledger.Change{Event: ledger.EventSelect, Intent: "INT-002", FromIntent: "INT-001", Process: proc},
			want:   map[string]string{"activity_id": "99", "activity_name": "Other", "intentfs.event": "select", "intentfs.intent": "INT-002", "intentfs.from_intent": "INT-001"},
			absent: []string{"file.path", "disposition"},
		},
		{
			name: "a ledger failure",
			c:    ledger.Change{Event: ledger.EventLedgerFailed, Code: "LEDGER_UNAVAILABLE", Reason: "disk full"},
			want: map[string]string{"status": "Failure", "intentfs.code": "LEDGER_UNAVAILABLE", "severity_id": "4"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ledger.NewRecord(tc.c, "t")
			got := attrs(LogRecord(r, tc.fields))
			if got["metadata.uid"] != r.ID {
				t.Errorf("metadata.uid = %q, want the record's id %q", got["metadata.uid"], r.ID)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			for _, k := range tc.absent {
				if v, ok := got[k]; ok {
					t.Errorf("%s = %q, want it absent", k, v)
				}
			}
		})
	}
}

func TestLogRecordSeverityAndBody(t *testing.T) {
	for _, tc := range []struct {
		c    ledger.Change
		sev  log.Severity
		body string
	}{
		{ledger.Change{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001"}, log.SeverityInfo, "write src/a.go (INT-001)"},
		{ledger.Change{Event: ledger.EventDenied, Op: "unlink", Path: "docs/x", Intent: "INT-001", Code: "OUT_OF_SCOPE"}, log.SeverityWarn, "denied unlink docs/x (INT-001): OUT_OF_SCOPE"},
		{ledger.Change{Event: ledger.EventRename, Path: "b", FromPath: "a"}, log.SeverityInfo, "rename a -> b"},
		{ledger.Change{Event: ledger.EventLedgerFailed, Code: "LEDGER_UNAVAILABLE"}, log.SeverityError, "ledger_failed: LEDGER_UNAVAILABLE"},
	} {
		rec := LogRecord(ledger.NewRecord(tc.c, "t"), Fields{})
		if rec.Severity() != tc.sev || rec.Body().AsString() != tc.body {
			t.Errorf("%s: severity %v body %q, want %v %q", tc.c.Event, rec.Severity(), rec.Body().AsString(), tc.sev, tc.body)
		}
		if rec.Timestamp().IsZero() {
			t.Errorf("%s: no timestamp", tc.c.Event)
		}
	}
}

// TestLogRecordStringsAreValidUTF8: OTLP refuses a batch with a string
// that is not UTF-8, so one odd reason must not lose the others.
func TestLogRecordStringsAreValidUTF8(t *testing.T) {
	r := ledger.NewRecord(ledger.Change{Event: ledger.EventDenied, Path: "a", Op: "control_write", Code: "INVALID_CONTROL_WRITE",
		Reason: "invalid write (\xff\xfe)", Process: &ledger.Process{Comm: "x\xffy"}}, "t")
	rec := LogRecord(r, Fields{})
	for k, v := range attrs(rec) {
		if !utf8.ValidString(v) {
			t.Errorf("%s = %q is not valid UTF-8", k, v)
		}
	}
	if got := attrs(rec)["status_detail"]; !strings.Contains(got, "\uFFFD") {
		t.Errorf("status_detail = %q, want the invalid bytes replaced", got)
	}
}
