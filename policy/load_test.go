package policy

import (
	"errors"
	"strings"
	"testing"
)

const validPolicy = `# team policy
active_intents:
  - id: INT-001
    name: Build the API
    status: IN_PROGRESS
    owned_scope:
      - "src/api/**"
      - docs/api.md
    constraints: [no new deps]
    acceptance_criteria:
      - tests pass
      - text: vet is clean
        check: go vet ./...
    related_specs:
      - type: speckit
        ref: specs/api.md
  - id: INT-002
    name: Docs
    status: PENDING
    version: 3
    parent_intent: INT-001
    owned_scope: ["src/api/docs/**"]
`

func TestParseIntentsValid(t *testing.T) {
	got, warns, err := ParseIntents("p.yaml", []byte(validPolicy))
	if err != nil {
		t.Fatalf("ParseIntents: %v", err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings = %v, want none", warns)
	}
	in := got.Get("INT-001")
	if in == nil || in.Name != "Build the API" || in.Status != StatusInProgress || in.Version != 1 || in.Line != 3 {
		t.Fatalf("INT-001 = %+v", in)
	}
	if len(in.AcceptanceCriteria) != 2 || in.AcceptanceCriteria[1] != (Criterion{Text: "vet is clean", Check: "go vet ./..."}) {
		t.Errorf("criteria = %q", in.AcceptanceCriteria)
	}
	if len(in.RelatedSpecs) != 1 || in.RelatedSpecs[0].Ref != "specs/api.md" {
		t.Errorf("specs = %+v", in.RelatedSpecs)
	}
	if in2 := got.Get("INT-002"); in2 == nil || in2.Version != 3 || in2.ParentIntent != "INT-001" {
		t.Errorf("INT-002 = %+v", in2)
	}
}

func TestParseIntentsDiagnostics(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		wantErr   bool
		line, col int
		contains  string
	}{
		{"syntax error", "active_intents:\n  - id: INT-001\n\tname: x\n", true, 2, 1, "YAML syntax"},
		{"empty file", "", true, 1, 1, "empty"},
		{"not a mapping", "- a\n", true, 1, 1, "top level"},
		{"missing list", "intents: []\n", true, 1, 1, "missing the top-level"},
		{"list is a string", "active_intents: nope\n", true, 1, 17, "must be a list"},
		{"bad id", "active_intents:\n  - id: int-1\n    name: abc\n    status: PENDING\n    owned_scope: [a]\n", true, 2, 9, "does not match"},
		{"missing id", "active_intents:\n  - name: abc\n    status: PENDING\n    owned_scope: [a]\n", true, 2, 5, `"id"`},
		{"short name", "active_intents:\n  - id: INT-001\n    name: ab\n    status: PENDING\n    owned_scope: [a]\n", true, 3, 11, "3 to 200"},
		{"bad status", "active_intents:\n  - id: INT-001\n    name: abc\n    status: DONE\n    owned_scope: [a]\n", true, 4, 13, "not one of"},
		{"bad version", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    version: 0\n    owned_scope: [a]\n", true, 5, 14, "at least 1"},
		{"no scope", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n", true, 2, 5, "no owned_scope"},
		{"empty scope", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: []\n", true, 5, 18, "at least one glob"},
		{"bad glob", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [\"src/[\"]\n", true, 5, 19, "not a valid glob"},
		{"absolute glob", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [/etc/**]\n", true, 5, 19, "leading /"},
		{"dotdot glob", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [../x]\n", true, 5, 19, "climb"},
		{"duplicate id", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [a]\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [a]\n", true, 6, 5, "duplicate intent id"},
		{"bad spec type", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [a]\n    related_specs: [{type: wiki, ref: x}]\n", true, 6, 21, "not one of"},
		{"bad timestamp", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [a]\n    created_at: yesterday\n", true, 6, 17, "RFC 3339"},
		{"unknown parent", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [a]\n    parent_intent: INT-009\n", true, 2, 1, "not defined"},
		{"unknown field warns", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [a]\n    colour: red\n", false, 6, 5, "unknown field"},
		{"field twice", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [a]\n    name: xyz\n", true, 6, 5, `field "name" appears twice in this intent`},
		{"unknown top key warns", "version: 2\nactive_intents: []\n", false, 1, 1, "unknown top-level"},
		{"notes not a mapping", "notes: [cmdline]\nactive_intents: []\n", true, 1, 8, "notes must be a mapping"},
		{"notes include not a list", "notes: {include: cmdline}\nactive_intents: []\n", true, 1, 18, "must be a list"},
		{"notes include unknown field", "notes: {include: [cmdline, env]}\nactive_intents: []\n", true, 1, 28, `"env" is not a field`},
		{"notes unknown key warns", "notes: {exclude: [cmdline]}\nactive_intents: []\n", false, 1, 9, "unknown notes field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags, err := ParseIntents("pol.yaml", []byte(tt.yaml))
			var ve *ValidationError
			if tt.wantErr != errors.As(err, &ve) {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			for _, d := range diags {
				if strings.Contains(d.Message, tt.contains) {
					if d.Line != tt.line || d.Column != tt.col || d.File != "pol.yaml" {
						t.Errorf("diagnostic %s at %d:%d, want %d:%d", d, d.Line, d.Column, tt.line, tt.col)
					}
					if tt.wantErr && !strings.Contains(err.Error(), "pol.yaml:") {
						t.Errorf("error text %q does not name the file", err)
					}
					return
				}
			}
			t.Errorf("no diagnostic containing %q in %v", tt.contains, diags)
		})
	}
}

func TestParentScopeContainment(t *testing.T) {
	base := "active_intents:\n  - id: INT-001\n    name: parent\n    status: IN_PROGRESS\n    owned_scope: [\"src/**\", \"docs/*.md\"]\n  - id: INT-002\n    name: child\n    status: PENDING\n    parent_intent: INT-001\n    owned_scope:\n      - %s\n"
	tests := []struct {
		pattern string
		ok      bool
	}{
		{`"src/api/**"`, true},
		{`"src/*.go"`, true},
		{`"docs/a.md"`, true},
		{`"docs/{a,b}.md"`, true},
		{`"**"`, false},
		{`"lib/**"`, false},
		{`"docs/**"`, false},
		{`"{src,lib}/x"`, false},
		{`"*.go"`, false},
	}
	for _, tt := range tests {
		_, diags, err := ParseIntents("p.yaml", []byte(strings.Replace(base, "%s", tt.pattern, 1)))
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok=%v", tt.pattern, err, tt.ok)
			continue
		}
		if !tt.ok {
			d := diags[len(diags)-1]
			if d.Line != 11 || !strings.Contains(d.Message, "not inside the scope of its parent INT-001") {
				t.Errorf("%s: diagnostic %s", tt.pattern, d)
			}
		}
	}
	cyc := "active_intents:\n  - id: INT-001\n    name: a-one\n    status: PENDING\n    parent_intent: INT-002\n    owned_scope: [\"**\"]\n  - id: INT-002\n    name: b-two\n    status: PENDING\n    parent_intent: INT-001\n    owned_scope: [\"**\"]\n"
	if _, _, err := ParseIntents("p.yaml", []byte(cyc)); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
}

func TestParseNotesInclude(t *testing.T) {
	tests := []struct {
		yaml string
		want []string
	}{
		{"active_intents: []\n", nil},
		{"notes:\nactive_intents: []\n", nil},
		{"notes: {include: []}\nactive_intents: []\n", nil},
		{"notes: {include: [cmdline, source]}\nactive_intents: []\n", []string{"cmdline", "source"}},
		{"notes:\n  include:\n    - uids\n    - exe\nactive_intents: []\n", []string{"uids", "exe"}},
	}
	for _, tt := range tests {
		in, _, err := ParseIntents("pol.yaml", []byte(tt.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if strings.Join(in.Notes.Include, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%q: include %v, want %v", tt.yaml, in.Notes.Include, tt.want)
		}
	}
}
