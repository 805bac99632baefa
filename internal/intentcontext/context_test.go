package intentcontext

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

func wellFormed(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(b)))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b)
		}
	}
}

func writeLedger(t *testing.T, changes []ledger.Change) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	f, _ := os.Create(p)
	defer f.Close()
	for i, c := range changes {
		c.Time = time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)
		b, _ := jsonMarshal(ledger.NewRecord(c, "t"))
		f.Write(append(b, '\n'))
	}
	return p
}

func intents(t *testing.T, yaml string) *policy.Intents {
	t.Helper()
	in, _, err := policy.ParseIntents("p.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

const ctxPolicy = `active_intents:
  - id: INT-001
    name: "parent & <root>"
    status: IN_PROGRESS
    owned_scope: ["**"]
  - id: INT-002
    name: api
    status: IN_PROGRESS
    parent_intent: INT-001
    owned_scope: ["src/**"]
    constraints: ["no new deps"]
    acceptance_criteria:
      - text: tests pass
        check: go test ./...
    related_specs:
      - type: speckit
        ref: specs/api.md
      - type: speckit
        ref: specs/missing.md
      - type: external
        ref: https://example.com/spec
`

func TestBuildContext(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "specs"), 0o755)
	os.WriteFile(filepath.Join(src, "specs/api.md"), []byte("# API spec\n"+strings.Repeat("x", 5000)), 0o644)
	led := writeLedger(t, []ledger.Change{
		{Event: ledger.EventCreate, Path: "src/a.go", Intent: "INT-002", Process: &ledger.Process{Comm: "sh"}},
		{Event: ledger.EventCreate, Path: "src/b.go", Intent: "INT-002"},
		{Event: ledger.EventRename, Path: "src/c.go", FromPath: "src/b.go", Intent: "INT-002"},
		{Event: ledger.EventCreate, Path: "other.go", Intent: "INT-001"},
		{Event: ledger.EventDelete, Path: "src/a.go", Intent: "INT-002"},
		{Event: ledger.EventWrite, Path: "src/c.go", Intent: "INT-002", Process: &ledger.Process{Comm: "sed"}},
		{Event: ledger.EventDenied, Path: "README.md", Intent: "INT-002"},
	})
	out, err := Build(Input{Intents: intents(t, ctxPolicy), ID: "INT-002", LedgerPath: led, Source: src, MapFiles: []string{"src/old.go"}})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, out)
	s := string(out)
	for _, want := range []string{
		`<intent_context id="INT-002" name="api" status="IN_PROGRESS" version="1">`,
		"<pattern>src/**</pattern>", "<constraint>no new deps</constraint>",
		`<criterion check="go test ./...">tests pass</criterion>`,
		`<parent id="INT-001" name="parent &amp; &lt;root&gt;" status="IN_PROGRESS" />`,
		`<file path="src/c.go" />`, `<file path="src/old.go" />`,
		`event="write" path="src/c.go" process="sed"`,
		`<spec_excerpt type="speckit" ref="specs/api.md"># API spec`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in:\n%s", want, s)
		}
	}
	for _, absent := range []string{`path="src/a.go" />`, "other.go", "README.md", "missing.md", "example.com", "truncated"} {
		if strings.Contains(s, `<file path="src/a.go"`) || strings.Contains(s, absent) && absent != `path="src/a.go" />` {
			t.Errorf("unexpected %s in:\n%s", absent, s)
		}
	}
	if strings.Index(s, `path="src/c.go" />`) > strings.Index(s, `path="src/old.go" />`) {
		t.Error("related files are not most recent first")
	}
	if n := strings.Count(s, "x"); n > 2100 {
		t.Errorf("spec excerpt longer than 2 KB (%d x)", n)
	}
}

func TestBudgetAndTruncationOrder(t *testing.T) {
	var changes []ledger.Change
	for i := range 300 {
		changes = append(changes, ledger.Change{Event: ledger.EventCreate, Path: fmt.Sprintf("src/file-%03d-%s.go", i, strings.Repeat("p", 120)), Intent: "INT-002"})
	}
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "specs"), 0o755)
	os.WriteFile(filepath.Join(src, "specs/api.md"), []byte(strings.Repeat("s", 4000)), 0o644)
	out, err := Build(Input{Intents: intents(t, ctxPolicy), ID: "INT-002", LedgerPath: writeLedger(t, changes), Source: src})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, out)
	s := string(out)
	if len(out) > DefaultBudget || !strings.Contains(s, `truncated="true"`) {
		t.Fatalf("len %d, truncated marker present: %v", len(out), strings.Contains(s, "truncated"))
	}
	// Recent changes go first, then the spec; the newest files stay.
	if strings.Contains(s, "<change ") || strings.Contains(s, "<spec_excerpt") {
		t.Errorf("recent changes or specs survived while files were cut")
	}
	if !strings.Contains(s, "file-299-") || strings.Contains(s, "file-000-") {
		t.Errorf("files were not cut oldest first")
	}
	if !strings.Contains(s, "<constraint>no new deps</constraint>") {
		t.Error("constraints dropped before related files were exhausted")
	}
}

func TestHostileInputsStayWellFormedAndInBudget(t *testing.T) {
	hostile := []string{"]]>", "<script>&amp;", "\x00\x01\x1b[31m", "\"quoted' & <tag attr=\"x\">", strings.Repeat("é", 3000)}
	var b strings.Builder
	b.WriteString("active_intents:\n  - id: INT-666\n    name: \"evil ]]> <x> \\x01\"\n    status: IN_PROGRESS\n    owned_scope: [\"**\"]\n    constraints:\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "      - %q\n", hostile[i%len(hostile)])
	}
	in := intents(t, b.String())
	for _, budget := range []int{DefaultBudget, 1024} {
		out, err := Build(Input{Intents: in, ID: "INT-666", Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		wellFormed(t, out)
		if len(out) > budget {
			t.Errorf("budget %d: %d bytes", budget, len(out))
		}
		if !strings.Contains(string(out), `truncated="true"`) {
			t.Errorf("budget %d: not marked truncated", budget)
		}
	}
	if _, err := Build(Input{Intents: in, ID: "INT-404"}); err == nil {
		t.Error("unknown intent accepted")
	}
}

func TestSpecSymlinkIsNotFollowed(t *testing.T) {
	src := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("TOP SECRET"), 0o600)
	os.MkdirAll(filepath.Join(src, "specs"), 0o755)
	os.Symlink(secret, filepath.Join(src, "specs/api.md"))
	out, err := Build(Input{Intents: intents(t, ctxPolicy), ID: "INT-002", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "TOP SECRET") {
		t.Fatal("a symlinked spec leaked a file from outside the workspace")
	}
}
