package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/ledger"
)

func TestLayoutPaths(t *testing.T) {
	l := At("/src")
	for _, tc := range []struct{ name, got, want string }{
		{"dir", l.Dir(), "/src/.orchestration"},
		{"policy", l.PolicyPath(), "/src/.orchestration/active_intents.yaml"},
		{"ledger", l.LedgerPath(), "/src/.orchestration/agent_trace.jsonl"},
		{"lock", l.LockPath(), "/src/.orchestration/.intentfs.lock"},
		{"objects", l.ObjectsDir(), "/src/.orchestration/objects"},
		{"intent map", l.IntentMapPath(), "/src/.orchestration/intent_map.md"},
		{"lessons", l.LessonsPath(), "/src/.orchestration/CLAUDE.md"},
		{"history ledger", l.History().Ledger, "/src/.orchestration/agent_trace.jsonl"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, tc.got, tc.want)
		}
	}
}

func TestWithLessonsFile(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       string
		wantErr    bool
	}{
		{name: "default", file: "", want: "/src/.orchestration/CLAUDE.md"},
		{name: "named", file: "AGENT.md", want: "/src/.orchestration/AGENT.md"},
		{name: "a path", file: "docs/AGENT.md", wantErr: true},
		{name: "absolute", file: "/etc/passwd", wantErr: true},
		{name: "parent", file: "..", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := At("/src").WithLessonsFile(tc.file)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil && l.LessonsPath() != tc.want {
				t.Errorf("lessons at %s, want %s", l.LessonsPath(), tc.want)
			}
		})
	}
}

// newSource is a source with an empty .orchestration/.
func newSource(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	if err := os.Mkdir(filepath.Join(src, ".orchestration"), 0o755); err != nil {
		t.Fatal(err)
	}
	return src
}

func TestOpenIsTheOnlyWriter(t *testing.T) {
	l := At(newSource(t))
	s, err := l.Open(OpenOptions{Holder: "first", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Open(OpenOptions{Holder: "second"}); !errors.Is(err, ledger.ErrAlreadyMounted) || !strings.Contains(err.Error(), "first") {
		t.Fatalf("second opening: %v, want ErrAlreadyMounted naming the first holder", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	s, err = l.Open(OpenOptions{Holder: "third"})
	if err != nil {
		t.Fatalf("after Close the lock is free: %v", err)
	}
	s.Close()
}

func TestSessionLessonsHonourTheLessonsFile(t *testing.T) {
	l, err := At(newSource(t)).WithLessonsFile("AGENT.md")
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Open(OpenOptions{Holder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Workflow.Lessons != s.Lessons {
		t.Error("the workflow appends lessons through another value than the opened source's")
	}
	if want := filepath.Join(l.Dir(), "AGENT.md"); s.Lessons.Path != want {
		t.Errorf("lessons go to %s, want %s", s.Lessons.Path, want)
	}
}

// TestRevertCarriesTheRevertedIntent: an offline revert records each step
// under the intent of the record it undoes, as a mount does.
func TestRevertCarriesTheRevertedIntent(t *testing.T) {
	src := newSource(t)
	l := At(src)
	const content = "hello\n"
	if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	hash, _, _, err := ledger.ContentHash(strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Open(OpenOptions{Holder: "test", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s.Append(ledger.Change{Event: ledger.EventCreate, Path: "a.txt", Intent: "INT-001", PostHash: hash, Validation: "pass"})
	var created string
	if err := s.Writer.Flush(); err != nil {
		t.Fatal(err)
	}
	ledger.Query(l.LedgerPath(), ledger.Filter{}, func(r *ledger.Record) error { created = r.ID; return nil })

	plan, applied, err := s.Revert(history.Request{Intent: "INT-001"}, &ledger.Process{Comm: "test"})
	if err != nil || applied != 1 {
		t.Fatalf("revert: %d applied, %v", applied, err)
	}
	if got := plan.Steps[0].Intent; got != "INT-001" {
		t.Errorf("the plan's step has intent %q, want INT-001", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(src, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a.txt still exists after the revert of its creation: %v", err)
	}
	var reverts []*ledger.Record
	ledger.Query(l.LedgerPath(), ledger.Filter{Events: []ledger.Event{ledger.EventRevert}}, func(r *ledger.Record) error {
		reverts = append(reverts, r)
		return nil
	})
	if len(reverts) != 1 {
		t.Fatalf("%d revert records, want 1", len(reverts))
	}
	g := reverts[0].Gov()
	if got := ledger.Str(g.IntentID); got != "INT-001" || g.RevertOf != created {
		t.Errorf("revert record: intent %q, revert_of %q; want INT-001, %s", got, g.RevertOf, created)
	}
}
