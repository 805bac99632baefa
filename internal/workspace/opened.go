package workspace

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/sidecar"
	"github.com/intentfs/intentfs/internal/workflow"
	"github.com/intentfs/intentfs/ledger"
)

// OpenOptions says who opens a source and how its changes are
// recorded.
type OpenOptions struct {
	// Holder names the lock's holder for a second writer's error
	// ("the mount at /work", "`intentfs revert`").
	Holder string
	// Version is the intentfs version stamped on every record.
	Version string
	// Log receives the ledger writer's warnings and errors; nil discards
	// them (a CLI command reports the error Close returns instead).
	Log *slog.Logger
	// LedgerMaxBytes rotates the ledger at this size (0: the default).
	LedgerMaxBytes int64
	// Record, if set, is how the workflow records a change; a mount passes
	// its own, which also counts the change and updates the intent map.
	// Unset, changes go straight to the ledger (Opened.Append).
	Record func(ledger.Change)
	// Changed is called after the workflow rewrote the policy.
	Changed func()
	// Committed, if set, sees each ledger record once it is on disk (see
	// ledger.WriterOptions.Committed).
	Committed func(*ledger.Record)
}

// Opened is a source opened for writing: its lock is held, so this
// process is the ledger's only writer until Close.
type Opened struct {
	Layout   Layout
	Writer   *ledger.Writer
	Lessons  *sidecar.Lessons
	Workflow *workflow.Workflow

	lock    *os.File
	version string
}

// Open takes the source's lock and opens its ledger (stamped with the
// git head) and a workflow whose lessons go to l's lessons file.
func (l Layout) Open(opts OpenOptions) (*Opened, error) {
	lock, err := ledger.AcquireLock(l.source, opts.Holder)
	if err != nil {
		return nil, err
	}
	git := ledger.NewGitHead(l.source)
	writer, err := ledger.OpenWriter(l.LedgerPath(), ledger.WriterOptions{Rev: git.Revision, Log: opts.Log,
		Source: l.source, Version: opts.Version, MaxBytes: opts.LedgerMaxBytes, Committed: opts.Committed})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("opening the ledger of %s: %w", l.source, err)
	}
	s := &Opened{Layout: l, Writer: writer, Lessons: l.Lessons(), lock: lock, version: opts.Version}
	record := opts.Record
	if record == nil {
		record = s.Append
	}
	s.Workflow = &workflow.Workflow{Source: l.source, Record: record, Lessons: s.Lessons, Changed: opts.Changed}
	return s, nil
}

// Append records c in the ledger.
func (s *Opened) Append(c ledger.Change) { s.Writer.Append(ledger.NewRecord(c, s.version)) }

// Revert plans and, unless r says otherwise, applies a revert in the
// source, recording each step as by. Each step carries the intent of the
// record it undoes, so the revert stays attributed to that intent.
func (s *Opened) Revert(r history.Request, by *ledger.Process) (*history.Plan, int, error) {
	if err := s.Writer.Flush(); err != nil {
		return nil, 0, err
	}
	return history.Run(s.Layout.source, s.Layout.LedgerPath(), s.Layout.Objects(), r, func(c ledger.Change) {
		c.Process = by
		s.Workflow.Record(c)
	})
}

// Close flushes and closes the ledger, then releases the lock. It is safe
// to call more than once.
func (s *Opened) Close() error {
	err := s.Writer.Close()
	if s.lock != nil {
		err = errors.Join(err, s.lock.Close())
		s.lock = nil
	}
	return err
}
