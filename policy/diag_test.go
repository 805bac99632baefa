package policy

import (
	"strings"
	"testing"
)

func TestValidationErrorCountsErrorsAndWarnings(t *testing.T) {
	diag := func(line int, sev Severity) Diagnostic {
		return Diagnostic{File: "p.yaml", Line: line, Column: 1, Severity: sev, Message: "m"}
	}
	tests := []struct {
		name  string
		diags []Diagnostic
		want  string
	}{
		{name: "one error", diags: []Diagnostic{diag(1, SevError)}, want: "invalid policy: 1 error\n"},
		{name: "errors and a warning", diags: []Diagnostic{diag(1, SevError), diag(2, SevWarning), diag(3, SevError)}, want: "invalid policy: 2 errors and 1 warning\n"},
		{name: "errors and warnings", diags: []Diagnostic{diag(1, SevError), diag(2, SevWarning), diag(3, SevWarning)}, want: "invalid policy: 1 error and 2 warnings\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&ValidationError{Diagnostics: tt.diags}).Error(); !strings.HasPrefix(got, tt.want) {
				t.Fatalf("Error() = %q, want it to start with %q", got, tt.want)
			}
		})
	}
}

// TestValidationErrorListsInFileOrder: findings read top to bottom, as
// the file does, whatever order the checks found them in.
func TestValidationErrorListsInFileOrder(t *testing.T) {
	e := &ValidationError{Diagnostics: []Diagnostic{
		{File: "p.yaml", Line: 9, Column: 5, Severity: SevWarning, Message: "late"},
		{File: "p.yaml", Line: 2, Column: 9, Severity: SevError, Message: "early"},
		{File: "p.yaml", Line: 2, Column: 5, Severity: SevError, Message: "earliest"},
	}}
	got := e.Error()
	if !(strings.Index(got, "earliest") < strings.Index(got, "early\n") && strings.Index(got, "early\n") < strings.Index(got, "late")) {
		t.Fatalf("not in file order:\n%s", got)
	}
}
