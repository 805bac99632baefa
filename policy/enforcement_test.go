package policy

import (
	"errors"
	"strings"
	"testing"
)

const observePolicy = `enforcement: observe
active_intents:
  - id: INT-001
    name: observed work
    status: IN_PROGRESS
    owned_scope: ["src/**"]
  - id: INT-002
    name: enforced work
    status: IN_PROGRESS
    enforcement: enforce
    owned_scope: ["src/**"]
  - id: INT-003
    name: pending work
    status: PENDING
    owned_scope: ["src/**"]
`

func TestParseEnforcement(t *testing.T) {
	tests := []struct {
		name    string
		policy  string
		wantErr string // "" for a valid policy
		line    int
	}{
		{"top-level observe", "enforcement: observe\nactive_intents:\n", "", 0},
		{"intent enforce", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    enforcement: enforce\n    owned_scope: [\"a\"]\n", "", 0},
		{"top-level typo", "enforcement: obsrve\nactive_intents:\n", "the top-level `enforcement` must be observe or enforce, not \"obsrve\"", 1},
		{"top-level list", "active_intents:\nenforcement: [observe]\n", "the top-level `enforcement` must be observe or enforce", 2},
		{"top-level twice", "enforcement: observe\nenforcement: enforce\nactive_intents:\n", "top-level key `enforcement` appears twice", 2},
		{"intent typo", "active_intents:\n  - id: INT-001\n    name: abc\n    status: PENDING\n    owned_scope: [\"a\"]\n    enforcement: warn\n", "`enforcement` of intent INT-001 must be observe or enforce, not \"warn\"", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseIntents("p.yaml", []byte(tt.policy))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseIntents: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			found := false
			for _, d := range ve.Diagnostics {
				if strings.Contains(d.Message, tt.wantErr) && d.Line == tt.line && d.File == "p.yaml" {
					found = true
				}
			}
			if !found {
				t.Errorf("diagnostics %v lack %q on line %d", ve.Diagnostics, tt.wantErr, tt.line)
			}
		})
	}
}

func TestObserved(t *testing.T) {
	in, _, err := ParseIntents("p.yaml", []byte(observePolicy))
	if err != nil {
		t.Fatal(err)
	}
	ig := loadIgnore(t, "build/\n")
	s := &Snapshot{Intents: in, Ignore: ig}
	tests := []struct {
		name     string
		req      Request
		code     Code
		allow    bool
		observed bool
	}{
		{"in scope", Request{Op: OpCreate, Path: "src/a.go", Intent: "INT-001"}, CodeAllowed, true, false},
		{"out of scope, observed intent", Request{Op: OpCreate, Path: "docs/a.md", Intent: "INT-001"}, CodeOutOfScope, true, true},
		{"out of scope, intent enforces", Request{Op: OpCreate, Path: "docs/a.md", Intent: "INT-002"}, CodeOutOfScope, false, false},
		{"no intent: the workspace observes", Request{Op: OpCreate, Path: "docs/a.md"}, CodeNoIntent, true, true},
		{"unknown intent: the workspace observes", Request{Op: OpCreate, Path: "docs/a.md", Intent: "INT-009"}, CodeUnknownIntent, true, true},
		{"pending intent", Request{Op: OpCreate, Path: "src/a.go", Intent: "INT-003"}, CodeNotInProgress, true, true},
		{"the policy file", Request{Op: OpOpenWrite, Path: ".orchestration/active_intents.yaml", Intent: "INT-001"}, CodeProtected, false, false},
		{"an ignore file", Request{Op: OpOpenWrite, Path: ".intentignore", Intent: "INT-001"}, CodeProtected, false, false},
		{"git hooks", Request{Op: OpCreate, Path: ".git/hooks/pre-commit", Intent: "INT-001"}, CodeProtected, false, false},
		{"git config", Request{Op: OpOpenWrite, Path: ".git/config", Intent: "INT-001"}, CodeProtected, false, false},
		{"outside the workspace", Request{Op: OpCreate, Path: "../x", Intent: "INT-001"}, CodeInternal, false, false},
		{"link between exempt and governed", Request{Op: OpLink, Path: "build/x", Path2: "src/a.go", Intent: "INT-001"}, CodeOutOfScope, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := s.Observed(tt.req, s.Decide(tt.req))
			if d.Code != tt.code || d.Allow != tt.allow || d.Observed != tt.observed {
				t.Fatalf("decision = %+v, want code %s allow %v observed %v", d, tt.code, tt.allow, tt.observed)
			}
			if d.Observed && (d.Validation != ValidationFail || d.Reason == "") {
				t.Errorf("an observed change must keep validation FAIL and a reason: %+v", d)
			}
		})
	}
}

func TestEnforcementFor(t *testing.T) {
	in, _, err := ParseIntents("p.yaml", []byte(strings.Replace(observePolicy, "enforcement: observe\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	s := &Snapshot{Intents: in}
	if got := s.EnforcementFor("INT-001"); got != Enforce {
		t.Errorf("default = %q, want enforce", got)
	}
	in.List[0].Enforcement = Observe
	if got := s.EnforcementFor("INT-001"); got != Observe {
		t.Errorf("intent override = %q, want observe", got)
	}
	if got := (*Snapshot)(nil).EnforcementFor("INT-001"); got != Enforce {
		t.Errorf("no policy = %q, want enforce", got)
	}
}
