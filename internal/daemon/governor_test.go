package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/internal/policyedit"
	"github.com/intentfs/intentfs/internal/workflow"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// The daemon's governance (selection, records, denials, checks, lessons,
// scope requests) is tested here on a source in a temporary directory,
// with everything Start sets up before it mounts: no FUSE is needed.

const testPolicy = `active_intents:
  - id: INT-001
    name: api work
    status: IN_PROGRESS
    owned_scope: ["src/**"]
  - id: INT-002
    name: docs to write
    status: PENDING
    owned_scope: ["docs/**"]
  - id: INT-003
    name: blocked work
    status: BLOCKED
    owned_scope: ["**"]
  - id: INT-004
    name: finished work
    status: COMPLETE
    owned_scope: ["**"]
`

// openDaemon opens the daemon of a new source holding policy, as Start
// does up to the mount, and closes it at the end of the test.
func openDaemon(t *testing.T, pol string) *Daemon {
	t.Helper()
	return openDaemonIn(t, t.TempDir(), pol, Config{})
}

// openDaemonIn is openDaemon on src, with cfg's AgentFiles.
func openDaemonIn(t *testing.T, src, pol string, cfg Config) *Daemon {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(src, policy.OrchestrationDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, policy.IntentsFile), []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cfg = Config{Source: src, Mountpoint: filepath.Join(t.TempDir(), "mnt"), Version: "test", Log: log, AgentFiles: cfg.AgentFiles}
	d, _, err := assemble(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.setupAgentFiles(); err != nil {
		t.Fatal(err)
	}
	d.publishAgentFiles()
	t.Cleanup(func() {
		d.actors.sessions.Close()
		d.gov.recordDenialSummaries(time.Now(), true)
		d.notes.close()
		d.git.gate.Close()
		d.upstream.mirror.Close()
		if err := errors.Join(d.writer.Close(), d.imap.Flush(), d.opened.Close()); err != nil {
			t.Errorf("closing: %v", err)
		}
	})
	return d
}

// human is the person at the CLI; agent a process of uid 1000. Both are
// this process, which the agent sessions can place (in no session).
func human() *ledger.Process {
	return &ledger.Process{Pid: uint32(os.Getpid()), Uid: 0, Comm: "intentfs (alice)"}
}

func agentProcess() *ledger.Process {
	return &ledger.Process{Pid: uint32(os.Getpid()), Uid: 1000, Gid: 1000, Comm: "sh"}
}

// records flushes the ledger and returns its records.
func records(t *testing.T, d *Daemon) []*ledger.Record {
	t.Helper()
	if err := d.FlushLedger(); err != nil {
		t.Fatal(err)
	}
	var out []*ledger.Record
	if err := ledger.Scan(d.LedgerPath(), func(_ int, r *ledger.Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// recordsOf returns the records of event ev.
func recordsOf(t *testing.T, d *Daemon, ev ledger.Event) []*ledger.Record {
	t.Helper()
	var out []*ledger.Record
	for _, r := range records(t, d) {
		if r.Gov().Event == ev {
			out = append(out, r)
		}
	}
	return out
}

// TestSelect: only a known intent that is neither blocked nor closed can
// be selected; a pending one starts; each change of selection is recorded
// once, naming the one before.
func TestSelect(t *testing.T) {
	d := openDaemon(t, testPolicy)
	tests := []struct {
		id      string
		err     string // part of the error, "" for none
		active  string
		records int // select records so far
	}{
		{"INT-009", `unknown intent "INT-009": defined intents are INT-001, INT-002, INT-003, INT-004`, "", 0},
		{"INT-003", "BLOCKED", "", 0},
		{"INT-004", "COMPLETE", "", 0},
		{"INT-001", "", "INT-001", 1},
		{"INT-001", "", "INT-001", 1}, // unchanged: nothing recorded
		{"INT-002", "", "INT-002", 2},
		{"", "", "", 3},
	}
	for _, tt := range tests {
		err := d.Select(tt.id, human())
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Fatalf("Select(%q) = %v, want an error containing %q", tt.id, err, tt.err)
		}
		if got := d.ActiveIntent(); got != tt.active {
			t.Fatalf("after Select(%q) the active intent is %q, want %q", tt.id, got, tt.active)
		}
		if got := len(recordsOf(t, d, ledger.EventSelect)); got != tt.records {
			t.Fatalf("after Select(%q): %d select records, want %d", tt.id, got, tt.records)
		}
	}
	sel := recordsOf(t, d, ledger.EventSelect)
	if g := sel[1].Gov(); ledger.Str(g.IntentID) != "INT-002" || ledger.Str(g.FromIntent) != "INT-001" || g.Process == nil || g.Process.Comm != "intentfs (alice)" {
		t.Errorf("the second select record: %+v", g)
	}
	// Selecting the pending INT-002 started it, in the policy file too.
	if in := d.Snapshot().Intents.Get("INT-002"); in == nil || in.Status != policy.StatusInProgress {
		t.Errorf("INT-002 after its selection: %+v", in)
	}
	if b, err := os.ReadFile(filepath.Join(d.Source(), policy.IntentsFile)); err != nil || strings.Count(string(b), "IN_PROGRESS") != 2 {
		t.Errorf("the policy file after INT-002 started (%v):\n%s", err, b)
	}
}

// TestSelectRateLimit: a uid selecting faster than its allowance is
// refused with EBUSY and the refusal recorded as a denial; another uid
// is not held back.
func TestSelectRateLimit(t *testing.T) {
	d := openDaemon(t, testPolicy)
	var err error
	for i := 0; i < selectBurst+2 && err == nil; i++ {
		err = d.Select([]string{"INT-001", ""}[i%2], agentProcess())
	}
	if !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), "too many intent selections by uid 1000") {
		t.Fatalf("selecting in a loop: %v, want EBUSY naming uid 1000", err)
	}
	denied := recordsOf(t, d, ledger.EventDenied)
	if len(denied) != 1 || denied[0].Gov().Code != "SELECT_RATE_LIMITED" || denied[0].Path() != fsnode.ControlDirName+"/active" {
		t.Fatalf("denials recorded: %+v", denied)
	}
	other := agentProcess()
	other.Uid = 1001
	target := "INT-001"
	if d.ActiveIntent() == target {
		target = ""
	}
	if err := d.Select(target, other); err != nil || d.ActiveIntent() != target {
		t.Fatalf("uid 1001 held back by uid 1000's selections: %v", err)
	}
}

// TestDenied: a refusal is kept for status and watchers, recorded with
// both ends of a rename, teaches the intent a lesson once per directory,
// and its repeats are counted rather than recorded one by one.
func TestDenied(t *testing.T) {
	d := openDaemon(t, testPolicy)
	if err := d.Select("INT-001", human()); err != nil {
		t.Fatal(err)
	}
	req := policy.Request{Op: policy.OpRename, Path: "src/a.go", Path2: "docs/a.go", Intent: "INT-001", Caller: policy.Caller{Pid: 7, Uid: 1000}}
	dec := policy.Decision{Code: policy.CodeOutOfScope, Reason: "docs/a.go is outside INT-001", Validation: policy.ValidationFail, Path: "docs/a.go"}
	for range 500 {
		d.gov.Denied(req, dec, agentProcess(), nil)
	}
	dn := d.Denials(agentProcess())
	// One process refusing the same thing in the same second is one line
	// (a save's repeated attempts), counting the rest.
	if len(dn) != 1 || dn[0].Repeats != 499 || dn[0].Path != "docs/a.go" || dn[0].Path2 != "src/a.go" || dn[0].Code != string(policy.CodeOutOfScope) {
		t.Fatalf("recent denials: %d, first %+v; want one line with 499 repeats, naming docs/a.go from src/a.go", len(dn), dn[0])
	}
	if st := d.Status(); st.Counters.Denied != 500 || len(st.RecentDenials) != 1 {
		t.Fatalf("status: %d denied, %d recent shown; want 500 and 1", st.Counters.Denied, len(st.RecentDenials))
	}
	full := recordsOf(t, d, ledger.EventDenied)
	if len(full) != 1 || full[0].Path() != "docs/a.go" || full[0].Gov().FromPath != "src/a.go" || full[0].Gov().Op != "rename" {
		t.Fatalf("denial records: %d, first %+v; want one, for docs/a.go from src/a.go", len(full), full[0].Gov())
	}
	d.gov.recordDenialSummaries(time.Now(), true)
	repeats := 0
	for _, r := range recordsOf(t, d, ledger.EventDenied) {
		repeats += r.Gov().Repeats
	}
	if repeats != 499 {
		t.Fatalf("summaries count %d repeats, want 499", repeats)
	}
	lessons, err := os.ReadFile(d.layout.LessonsPath())
	if err != nil || strings.Count(string(lessons), "`docs/a.go` (in `docs/`) is outside this intent's owned_scope (src/**)") != 1 {
		t.Fatalf("lessons (%v):\n%s", err, lessons)
	}
}

// TestInvalidControlWrite: garbage written to a control file is a denial
// naming the file, with the text shown bounded and valid.
func TestInvalidControlWrite(t *testing.T) {
	d := openDaemon(t, testPolicy)
	backendOf(d).InvalidControlWrite("active", []byte(strings.Repeat("x", 100)+"\xff"), errors.New("no such intent"), agentProcess())
	rs := recordsOf(t, d, ledger.EventDenied)
	if len(rs) != 1 {
		t.Fatalf("%d denial records, want 1", len(rs))
	}
	g := rs[0].Gov()
	if g.Code != "INVALID_CONTROL_WRITE" || rs[0].Path() != ".intentfs/active" ||
		!strings.Contains(g.Reason, `("`+strings.Repeat("x", 64)+`...")`) || !strings.HasSuffix(g.Reason, "no such intent") {
		t.Fatalf("record %+v", g)
	}
}

// TestCheck: the dry run answers what the mount would decide, with the
// intents covering the path, and refuses paths and operations it cannot
// judge.
func TestCheck(t *testing.T) {
	d := openDaemon(t, testPolicy)
	if err := d.Select("INT-001", human()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, op string
		err      string
		allowed  bool
		code     policy.Code
		covered  string
	}{
		{"src/a.go", "", "", true, policy.CodeAllowed, "INT-001,INT-003,INT-004"},
		{d.cfg.Mountpoint + "/src/a.go", "unlink", "", true, policy.CodeAllowed, "INT-001,INT-003,INT-004"},
		{"docs/x.md", "create", "", false, policy.CodeOutOfScope, "INT-002,INT-003,INT-004"},
		{policy.IntentsFile, "", "", false, policy.CodeProtected, "INT-003,INT-004"},
		{"src", "mkdir", "", true, policy.CodeAllowed, "INT-001,INT-003,INT-004"},
		{"../etc/passwd", "", "not a path inside the workspace", false, "", ""},
		{"/etc/passwd", "", "is not inside the mount", false, "", ""},
		{"src/a.go", "explode", `unknown operation "explode"`, false, "", ""},
	}
	for _, tt := range tests {
		res, err := d.DryRun(tt.path, tt.op, agentProcess())
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Check(%s, %s) = %v, want an error containing %q", tt.path, tt.op, err, tt.err)
			}
			continue
		}
		var covered []string
		for _, in := range res.CoveredBy {
			covered = append(covered, in.ID)
		}
		if err != nil || res.Allowed != tt.allowed || res.Code != string(tt.code) || strings.Join(covered, ",") != tt.covered || res.ActiveIntent != "INT-001" {
			t.Errorf("Check(%s, %s) = %+v, %v; want allowed %v, %s, covered by %s", tt.path, tt.op, res, err, tt.allowed, tt.code, tt.covered)
		}
	}
	if rs := records(t, d); len(rs) != 2 || rs[1].Gov().Event != ledger.EventSelect {
		t.Errorf("the dry run recorded: %d records, want only the header and the select", len(rs))
	}
}

// TestRecordKeepsTheMapAndCounters: an allowed content change is counted,
// written to the ledger and entered in the intent map; a governance
// event is counted as recorded only.
func TestRecordKeepsTheMapAndCounters(t *testing.T) {
	d := openDaemon(t, testPolicy)
	pass := string(policy.ValidationPass)
	d.gov.Record(ledger.Change{Event: ledger.EventCreate, Path: "src/new.go", PostHash: "sha256:" + strings.Repeat("1", 64), Intent: "INT-001", Validation: pass})
	d.gov.Record(ledger.Change{Event: ledger.EventWrite, Path: "src/old.go", PreHash: "sha256:" + strings.Repeat("2", 64), PostHash: "sha256:" + strings.Repeat("3", 64), Intent: "INT-001", Validation: pass})
	d.gov.Record(ledger.Change{Event: ledger.EventRename, Path: "src/moved.go", FromPath: "src/old.go", Intent: "INT-001", Validation: pass})
	d.gov.Record(ledger.Change{Event: ledger.EventDelete, Path: "src/new.go", Intent: "INT-001", Validation: pass})
	d.gov.Record(ledger.Change{Event: ledger.EventLesson, Intent: "INT-001", Reason: "x"})
	if err := d.FlushLedger(); err != nil {
		t.Fatal(err)
	}
	st := d.Status()
	if st.Counters.Recorded != 5 || st.Counters.Allowed != 4 || st.Ledger.Appended < 5 {
		t.Fatalf("counters %+v, ledger %+v; want 5 recorded, 4 allowed", st.Counters, st.Ledger)
	}
	if got := strings.Join(d.imap.Files("INT-001"), ","); got != "src/moved.go" {
		t.Fatalf("the intent map lists %q for INT-001, want src/moved.go (created and deleted: gone; renamed: moved)", got)
	}
	rs := records(t, d)[1:] // after the chain's header
	if len(rs) != 5 || rs[0].Path() != "src/new.go" || rs[0].Timestamp == "" || rs[2].Gov().FromPath != "src/old.go" {
		t.Fatalf("records: %d, first %+v", len(rs), rs[0])
	}
}

// TestStatusAndIntentList: status names the active intent, its name and
// status; the intent list marks it.
func TestStatusAndIntentList(t *testing.T) {
	d := openDaemon(t, testPolicy)
	if got := string(backendOf(d).IntentList(agentProcess())); strings.Contains(got, "\n*") || strings.HasPrefix(got, "*") ||
		!strings.Contains(got, "  INT-003    BLOCKED     blocked work  scope: **\n") {
		t.Fatalf("intent list with none active:\n%s", got)
	}
	if err := d.Select("INT-001", human()); err != nil {
		t.Fatal(err)
	}
	st := d.Status()
	if st.ActiveIntent != "INT-001" || st.IntentName != "api work" || st.IntentStatus != "IN_PROGRESS" || st.Source != d.Source() ||
		st.LedgerPath != d.LedgerPath() || st.Pid != os.Getpid() || st.SourceWatched {
		t.Fatalf("status %+v", st)
	}
	if got := string(backendOf(d).IntentList(agentProcess())); !strings.HasPrefix(got, "* INT-001    IN_PROGRESS api work  scope: src/**\n") || strings.Count(got, "\n*") != 0 {
		t.Fatalf("intent list:\n%s", got)
	}
	if name, status := backendOf(d).IntentInfo("INT-004"); name != "finished work" || status != "COMPLETE" {
		t.Fatalf("IntentInfo(INT-004) = %q, %q", name, status)
	}
	if name, status := backendOf(d).IntentInfo("INT-404"); name != "" || status != "" {
		t.Fatalf("IntentInfo of an unknown intent = %q, %q", name, status)
	}
	empty := openDaemon(t, "active_intents: []\n")
	if got := string(backendOf(empty).IntentList(agentProcess())); !strings.HasPrefix(got, "no intents are defined") {
		t.Fatalf("intent list of an empty policy: %q", got)
	}
}

// TestLessonsAndContext: a lesson is recorded once under the intent in
// force; the context is that of the intent in force.
func TestLessonsAndContext(t *testing.T) {
	d := openDaemon(t, testPolicy)
	if _, err := backendOf(d).Context("", agentProcess()); err == nil {
		t.Fatal("a context without an intent")
	}
	if err := d.Select("INT-001", human()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := backendOf(d).Lesson("run go vet before committing\n", agentProcess()); err != nil {
			t.Fatal(err)
		}
	}
	ls := recordsOf(t, d, ledger.EventLesson)
	if len(ls) != 1 || ledger.Str(ls[0].Gov().IntentID) != "INT-001" || ls[0].Gov().Reason != "run go vet before committing" {
		t.Fatalf("lesson records: %d %+v", len(ls), ls)
	}
	ctx, err := backendOf(d).Context("", agentProcess())
	if err != nil || !strings.HasPrefix(string(ctx), `<intent_context id="INT-001" name="api work"`) || !strings.Contains(string(ctx), "<pattern>src/**</pattern>") {
		t.Fatalf("context (%v):\n%s", err, ctx)
	}
}

// TestDeclareClass: only a declarable class is taken, until changed.
func TestDeclareClass(t *testing.T) {
	d := openDaemon(t, testPolicy)
	if err := backendOf(d).DeclareClass("FILE_DELETION", agentProcess()); err == nil {
		t.Fatal("a class that is not declarable was taken")
	}
	if d.gov.DeclaredClass() != "" {
		t.Fatalf("declared %q before any declaration", d.gov.DeclaredClass())
	}
	if err := backendOf(d).DeclareClass(string(ledger.ClassDocumentation), agentProcess()); err != nil || d.gov.DeclaredClass() != ledger.ClassDocumentation {
		t.Fatalf("declaring documentation: %v, %q", err, d.gov.DeclaredClass())
	}
	if err := backendOf(d).DeclareClass("", agentProcess()); err != nil || d.gov.DeclaredClass() != "" {
		t.Fatalf("declaring none: %v, %q", err, d.gov.DeclaredClass())
	}
}

// TestScopeRequestApproved: an agent's request for more scope waits for a
// human; approving it adds the paths to the intent's owned_scope.
func TestScopeRequestApproved(t *testing.T) {
	d := openDaemon(t, testPolicy)
	if _, err := backendOf(d).RequestScope([]string{"docs/api.md"}, "documenting the api", agentProcess()); err == nil {
		t.Fatal("a scope request without an active intent")
	}
	if err := d.Select("INT-001", human()); err != nil {
		t.Fatal(err)
	}
	id, err := backendOf(d).RequestScope([]string{"docs/api.md"}, "documenting the api", agentProcess())
	if err != nil {
		t.Fatal(err)
	}
	pending := d.approvals.List()
	if len(pending) != 1 || pending[0].ID != id || pending[0].Kind != approvals.KindScopeRequest || pending[0].Intent != "INT-001" {
		t.Fatalf("pending: %+v", pending)
	}
	if st := d.Status(); st.Waiting != 1 {
		t.Fatalf("status shows %d waiting", st.Waiting)
	}
	if _, err := backendOf(d).decideApproval(control.DecideRequest{ID: id + 1, Verdict: approvals.VerdictApproved}, human()); err == nil {
		t.Fatal("deciding an id that is not pending")
	}
	decs, err := backendOf(d).decideApproval(control.DecideRequest{ID: id, Verdict: approvals.VerdictApproved}, human())
	if err != nil || len(decs) != 1 || decs[0].By != "alice (uid 0)" {
		t.Fatalf("approving: %v %+v", err, decs)
	}
	if in := d.Snapshot().Intents.Get("INT-001"); in == nil || !in.InScope("docs/api.md") || !in.InScope("src/a.go") {
		t.Fatalf("INT-001 after the approval: %+v", in)
	}
	if res, err := d.DryRun("docs/api.md", "", agentProcess()); err != nil || !res.Allowed {
		t.Fatalf("docs/api.md after the approval: %+v %v", res, err)
	}
	var codes []string
	for _, r := range recordsOf(t, d, ledger.EventApproval) {
		codes = append(codes, r.Gov().Code)
	}
	if strings.Join(codes, ",") != "REQUESTED,APPROVED" {
		t.Fatalf("approval records %v, want the request and its approval", codes)
	}
}

// TestHoldWaitsForAHuman: a change an approval rule holds proceeds once
// approved, and is refused (and recorded as a denial) once denied.
func TestHoldWaitsForAHuman(t *testing.T) {
	d := openDaemon(t, "approvals:\n  - name: any-delete\n    ops: [delete]\n"+testPolicy)
	hold := func() <-chan syscall.Errno {
		out := make(chan syscall.Errno, 1)
		go func() {
			out <- d.gov.Hold(context.Background(), fsnode.HoldRequest{Process: agentProcess(), Request: policy.Request{Op: policy.OpUnlink, Path: "src/a.go",
				Intent: "INT-001", Caller: policy.Caller{Pid: uint32(os.Getpid()), Uid: 1000}}})
		}()
		return out
	}
	// A change no rule holds does not wait.
	if e := d.gov.Hold(context.Background(), fsnode.HoldRequest{Process: agentProcess(), Request: policy.Request{Op: policy.OpOpenWrite, Path: "src/a.go", Intent: "INT-001"}}); e != 0 {
		t.Fatalf("a write held: %v", e)
	}
	for _, tt := range []struct {
		verdict string
		want    syscall.Errno
	}{{approvals.VerdictApproved, 0}, {approvals.VerdictDenied, syscall.EACCES}} {
		got := hold()
		var id uint64
		for deadline := time.Now().Add(10 * time.Second); id == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the delete never waited for approval")
			}
			if p := d.approvals.List(); len(p) == 1 {
				id = p[0].ID
			}
		}
		if _, err := backendOf(d).decideApproval(control.DecideRequest{ID: id, Verdict: tt.verdict}, human()); err != nil {
			t.Fatal(err)
		}
		if e := <-got; e != tt.want {
			t.Fatalf("after %s: %v, want %v", tt.verdict, e, tt.want)
		}
	}
	if dn := recordsOf(t, d, ledger.EventDenied); len(dn) != 1 || dn[0].Path() != "src/a.go" {
		t.Fatalf("denial records after one denied delete: %+v", dn)
	}
}

// TestIntentOp: a lifecycle command changes the policy file and the
// policy in force at once.
func TestIntentOp(t *testing.T) {
	d := openDaemon(t, testPolicy)
	err := d.wf.Do(workflow.Request{Action: "new", New: &policyedit.NewIntent{ID: "INT-005", Name: "new work", Scope: []string{"lib/**"}}}, human())
	if err != nil {
		t.Fatal(err)
	}
	if in := d.Snapshot().Intents.Get("INT-005"); in == nil || !in.InScope("lib/x.go") {
		t.Fatalf("INT-005 after new: %+v", in)
	}
	if err := d.wf.Do(workflow.Request{Action: "block", ID: "INT-001", Reason: "waiting on review"}, human()); err != nil {
		t.Fatal(err)
	}
	if err := d.Select("INT-001", human()); err == nil || !strings.Contains(err.Error(), "BLOCKED") {
		t.Fatalf("selecting the blocked INT-001: %v", err)
	}
}

func TestDeciderName(t *testing.T) {
	tests := []struct {
		by   *ledger.Process
		want string
	}{
		{nil, "intentfs"},
		{&ledger.Process{Uid: 1000, Comm: "intentfs (bob)"}, "bob (uid 1000)"},
		{&ledger.Process{Uid: 1000, Comm: "sh"}, "uid 1000 (uid 1000)"},
		{&ledger.Process{Uid: 5, Comm: "intentfs (\x1b[31mred)"}, `\x1b[31mred (uid 5)`},
	}
	for _, tt := range tests {
		if got := deciderName(tt.by); got != tt.want {
			t.Errorf("deciderName(%+v) = %q, want %q", tt.by, got, tt.want)
		}
	}
}

func TestHeldWritersReason(t *testing.T) {
	var held []control.OpenWriter
	for i := range 12 {
		held = append(held, control.OpenWriter{Path: "src/f" + string(rune('a'+i)), Intent: "INT-002", Pid: uint32(100 + i)})
	}
	got := heldWritersReason(held)
	if !strings.HasPrefix(got, "12 file(s) stay open for writing under other intents") || !strings.Contains(got, " src/fa (INT-002, pid 100)") ||
		!strings.HasSuffix(got, " and 2 more") || strings.Contains(got, "src/fk") {
		t.Fatalf("heldWritersReason = %q", got)
	}
}

// TestCheckMountpoint: only an empty directory that is not a mount
// already is taken, unless mounting over entries is asked for.
func TestCheckMountpoint(t *testing.T) {
	empty := t.TempDir()
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir      string
		nonEmpty bool
		err      string
	}{
		{empty, false, ""},
		{full, false, `is not empty (it holds "notes.txt"`},
		{full, true, ""},
		{filepath.Join(empty, "missing"), false, "no such file"},
	}
	for _, tt := range tests {
		err := CheckMountpoint(tt.dir, tt.nonEmpty)
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("CheckMountpoint(%s, %v) = %v, want an error containing %q", tt.dir, tt.nonEmpty, err, tt.err)
		}
	}
}

// TestCanonicalDirAndIsBelow: a source or mountpoint is resolved to a
// directory with no symlink, and a mountpoint inside the source is told
// apart from a sibling with a common prefix.
func TestCanonicalDirAndIsBelow(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	canon, _ := filepath.EvalSymlinks(real)
	if got, err := canonicalDir(filepath.Join(dir, "link"), "source"); err != nil || got != canon {
		t.Errorf("canonicalDir(link) = %q, %v; want %q", got, err, canon)
	}
	if _, err := canonicalDir(filepath.Join(dir, "file"), "source"); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("canonicalDir(file) = %v", err)
	}
	if _, err := canonicalDir(filepath.Join(dir, "missing"), "mountpoint"); err == nil || !strings.HasPrefix(err.Error(), "mountpoint ") {
		t.Errorf("canonicalDir(missing) = %v", err)
	}
	for _, tt := range []struct {
		p, dir string
		want   bool
	}{
		{"/src/mnt", "/src", true},
		{"/src/a/b", "/src", true},
		{"/srcmnt", "/src", false},
		{"/src", "/src", false},
		{"/other", "/src", false},
		{"/src/..mnt", "/src", true},
		{"/src/m", "/src", true},
		{"/src/../src/m", "/src", true},
	} {
		if got := isBelow(tt.p, tt.dir); got != tt.want {
			t.Errorf("isBelow(%s, %s) = %v, want %v", tt.p, tt.dir, got, tt.want)
		}
	}
}

// TestMountOptions: a watched source is cached for long, an unwatched one
// briefly; the kernel checks permissions and ACLs either way.
func TestMountOptions(t *testing.T) {
	for _, watched := range []bool{false, true} {
		o := mountOptions(Config{Source: "/src"}, watched, DataPathPassthrough)
		want := shortCache
		if watched {
			want = longCache
		}
		if *o.EntryTimeout != want || *o.AttrTimeout != want || *o.NegativeTimeout != shortCache {
			t.Errorf("watched %v: timeouts %v %v %v", watched, *o.EntryTimeout, *o.AttrTimeout, *o.NegativeTimeout)
		}
		if !o.EnableAcl || !o.EnableLocks || len(o.Options) != 1 || o.Options[0] != "default_permissions" || o.FsName != "/src" ||
			o.AllowOther != (os.Geteuid() == 0) {
			t.Errorf("watched %v: mount options %+v", watched, o.MountOptions)
		}
	}
}

// TestStatusShowsEachIntentsEnforcement: with no intent selected (each
// session pinned to its own), the mode in force for the active intent is
// the workspace's; status also reports each intent's own, so an intent in
// observe mode is never shown as enforced.
func TestStatusShowsEachIntentsEnforcement(t *testing.T) {
	d := openDaemon(t, `enforcement: enforce
active_intents:
  - id: INT-001
    name: api work
    status: IN_PROGRESS
    enforcement: observe
    owned_scope: ["src/**"]
  - id: INT-002
    name: docs to write
    status: IN_PROGRESS
    owned_scope: ["docs/**"]
`)
	st := d.Status()
	want := []control.IntentEnforcement{{ID: "INT-001", Status: "IN_PROGRESS", Enforcement: "observe"}, {ID: "INT-002", Status: "IN_PROGRESS", Enforcement: "enforce"}}
	if st.WorkspaceEnforcement != "enforce" || !slices.Equal(st.IntentEnforcement, want) {
		t.Fatalf("workspace %q, intents %+v; want enforce and %+v", st.WorkspaceEnforcement, st.IntentEnforcement, want)
	}
}

// backendOf is d as the control plane sees it.
func backendOf(d *Daemon) controlBackend { return controlBackend{d} }
