package workflow

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentfs/intentfs/internal/policyedit"
	"github.com/intentfs/intentfs/internal/sidecar"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

type recorder struct {
	mu  sync.Mutex
	got []ledger.Change
}

func (r *recorder) record(c ledger.Change) { r.mu.Lock(); r.got = append(r.got, c); r.mu.Unlock() }

func newWorkflow(t *testing.T, yaml string) (*Workflow, *recorder) {
	t.Helper()
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, ".orchestration"), 0o755)
	os.WriteFile(filepath.Join(src, policy.IntentsFile), []byte(yaml), 0o644)
	rec := &recorder{}
	return &Workflow{Source: src, Record: rec.record, Lessons: &sidecar.Lessons{Path: filepath.Join(src, ".orchestration/CLAUDE.md")}}, rec
}

const wfPolicy = "# keep this comment\nactive_intents:\n  - id: INT-001\n    name: first one\n    status: PENDING\n    owned_scope: [\"src/**\"]\n    acceptance_criteria:\n      - text: passes\n        check: \"true\"\n      - text: fails\n        check: \"echo boom; exit 3\"\n      - by eye\n"

func TestLifecycleThroughWorkflow(t *testing.T) {
	w, rec := newWorkflow(t, wfPolicy)
	by := &ledger.Process{Pid: 1, Comm: "intentfs (alice)"}
	if _, err := w.Transition("INT-001", policy.StatusComplete, "", by); err == nil || !strings.Contains(err.Error(), "IN_PROGRESS or ARCHIVED") {
		t.Fatalf("PENDING → COMPLETE: %v", err)
	}
	from, err := w.Transition("INT-001", policy.StatusInProgress, "go", by)
	if err != nil || from != policy.StatusPending {
		t.Fatalf("start: %v %v", from, err)
	}
	if err := w.Scope("INT-001", []string{"docs/**"}, nil, by); err != nil {
		t.Fatal(err)
	}
	if err := w.Create(policyedit.NewIntent{ID: "INT-002", Name: "child work", Scope: []string{"src/api/**"}, Parent: "INT-001"}, by); err != nil {
		t.Fatal(err)
	}
	if err := w.Create(policyedit.NewIntent{ID: "INT-003", Name: "escapes", Scope: []string{"lib/**"}, Parent: "INT-001"}, by); err == nil || !strings.Contains(err.Error(), "not inside the scope of its parent") {
		t.Fatalf("escaping child: %v", err)
	}
	in, err := w.Load()
	if err != nil {
		t.Fatal(err)
	}
	it := in.Get("INT-001")
	if it.Status != policy.StatusInProgress || it.Version != 2 || len(it.OwnedScope) != 2 || in.Get("INT-002") == nil {
		t.Fatalf("after edits: %+v", it)
	}
	b, _ := os.ReadFile(w.PolicyPath())
	if !strings.HasPrefix(string(b), "# keep this comment\n") {
		t.Fatal("comment lost")
	}

	results := RunChecks(it.AcceptanceCriteria, t.TempDir(), 10*time.Second, nil, nil)
	if len(results) != 3 || !results[0].Passed || results[1].Passed || results[1].ExitCode != 3 || !strings.Contains(results[1].Output, "boom") || results[2].Check != "" {
		t.Fatalf("results %+v", results)
	}
	if err := w.Complete("INT-001", results, false, by); err == nil || !strings.Contains(err.Error(), "1 of 2") {
		t.Fatalf("complete with a failure: %v", err)
	}
	lessons, _ := os.ReadFile(w.Lessons.Path)
	if !strings.Contains(string(lessons), "[INT-001] Acceptance check failed for \"fails\"") {
		t.Fatalf("no lesson:\n%s", lessons)
	}
	if err := w.Complete("INT-001", results, false, by); err == nil {
		t.Fatal("second failing complete passed")
	}
	if n := strings.Count(mustRead(t, w.Lessons.Path), "Acceptance check failed"); n != 1 {
		t.Fatalf("%d lessons for the same failure", n)
	}
	if err := w.Complete("INT-001", results, true, by); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transition("INT-001", policy.StatusInProgress, "", by); err == nil {
		t.Fatal("COMPLETE → IN_PROGRESS allowed")
	}
	var events []string
	for _, c := range rec.got {
		events = append(events, string(c.Event)+":"+c.From+">"+c.To)
	}
	want := "transition:PENDING>IN_PROGRESS scope:> transition:>PENDING lesson:> transition:IN_PROGRESS>COMPLETE"
	if strings.Join(events, " ") != want {
		t.Fatalf("records %v, want %s", events, want)
	}
	if last := rec.got[len(rec.got)-1]; !strings.Contains(last.Reason, "forced") || last.Process.Comm != "intentfs (alice)" {
		t.Fatalf("forced record %+v", last)
	}
}

func TestCheckTimeout(t *testing.T) {
	r := RunChecks([]policy.Criterion{{Text: "slow", Check: "sleep 5"}}, t.TempDir(), 200*time.Millisecond, nil, nil)
	if r[0].Passed || !strings.Contains(r[0].Output, "timed out") || r[0].Seconds > 3 {
		t.Fatalf("%+v", r[0])
	}
}

func mustRead(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
