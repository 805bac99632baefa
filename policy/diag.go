package policy

import (
	"fmt"
	"strings"
)

// Severity says whether a diagnostic stops the policy from loading.
type Severity string

// Diagnostic severities.
const (
	SevError   Severity = "error"
	SevWarning Severity = "warning"
)

// Diagnostic is one finding about a policy or ignore file, with its
// position and what to do about it.
type Diagnostic struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Column   int      `json:"column"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", d.File, d.Line, d.Column, d.Severity, d.Message)
}

// ValidationError is returned when a policy file has at least one error.
// It carries every diagnostic, warnings included, so a user can fix them
// all in one pass.
type ValidationError struct {
	Diagnostics []Diagnostic
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	n := 0
	for _, d := range e.Diagnostics {
		if d.Severity == SevError {
			n++
		}
	}
	fmt.Fprintf(&b, "invalid policy: %d error(s)", n)
	for _, d := range e.Diagnostics {
		b.WriteString("\n  ")
		b.WriteString(d.String())
	}
	return b.String()
}
