package policy

import (
	"cmp"
	"fmt"
	"slices"
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
	errs, warns := 0, 0
	for _, d := range e.Diagnostics {
		if d.Severity == SevError {
			errs++
		} else {
			warns++
		}
	}
	fmt.Fprintf(&b, "invalid policy: %s", count(errs, "error"))
	if warns > 0 {
		fmt.Fprintf(&b, " and %s", count(warns, "warning"))
	}
	// In file order, so they read top to bottom like the file.
	sorted := slices.Clone(e.Diagnostics)
	slices.SortStableFunc(sorted, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	for _, d := range sorted {
		b.WriteString("\n  ")
		b.WriteString(d.String())
	}
	return b.String()
}

// count is "1 error", "2 errors".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
