package workflow

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"time"

	"github.com/intentfs/intentfs/policy"
)

// maxCheckOutput is how much of a check's output is kept.
const maxCheckOutput = 8192

// CheckResult is the outcome of one acceptance criterion.
type CheckResult struct {
	Text     string  `json:"text"`
	Check    string  `json:"check,omitempty"` // "" for a criterion a human verifies
	Passed   bool    `json:"passed"`
	ExitCode int     `json:"exit_code"`
	Output   string  `json:"output,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// CheckCommand builds the command that runs one check in dir.
type CheckCommand func(ctx context.Context, check, dir string) *exec.Cmd

// ShellIn runs a check with sh -c in dir as the calling user.
func ShellIn(ctx context.Context, check, dir string) *exec.Cmd {
	// The shell starts in / and changes into dir itself: the mount may
	// be served by this very process (an offline completion mounts one),
	// and a child that enters it before its exec, while Go's vfork
	// holds the parent's goroutine, can wait on a daemon whose
	// goroutines a garbage collection has stopped, forever.
	cmd := exec.CommandContext(ctx, "sh", "-c", `cd "$0" || exit 126; exec sh -c "$1"`, dir, check)
	cmd.Dir = "/"
	return cmd
}

// RunChecks runs each criterion's check in dir (inside the mount, with
// the intent in force), through command (nil: ShellIn), each bounded by
// timeout. Criteria without a check are reported, not run.
func RunChecks(criteria []policy.Criterion, dir string, timeout time.Duration, command CheckCommand, progress func(i int, c policy.Criterion)) []CheckResult {
	if command == nil {
		command = ShellIn
	}
	out := make([]CheckResult, 0, len(criteria))
	for i, c := range criteria {
		r := CheckResult{Text: c.Text, Check: c.Check}
		if c.Check == "" {
			out = append(out, r)
			continue
		}
		if progress != nil {
			progress(i, c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		cmd := command(ctx, c.Check, dir)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		cmd.WaitDelay = time.Second
		start := time.Now()
		err := cmd.Run()
		r.Seconds = time.Since(start).Seconds()
		cancel()
		var ee *exec.ExitError
		switch {
		case err == nil:
			r.Passed = true
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			r.ExitCode = -1
			buf.WriteString("\n(timed out after " + timeout.String() + ")")
		case errors.As(err, &ee):
			r.ExitCode = ee.ExitCode()
		default:
			r.ExitCode = -1
			buf.WriteString("\n" + err.Error())
		}
		o := buf.Bytes()
		if len(o) > maxCheckOutput {
			o = append([]byte("…"), o[len(o)-maxCheckOutput:]...)
		}
		r.Output = string(o)
		out = append(out, r)
	}
	return out
}
