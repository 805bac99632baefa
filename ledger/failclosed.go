package ledger

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The ledger fails closed. A change is allowed before its record is on
// disk (records are committed in groups), so the writer keeps every line
// it has encoded in pending until a write and fsync of it succeed: a line
// that could not be committed is retried, never dropped, and the hash
// chain stays in order. When a commit fails, the writer
//
//  1. releases its reserve, a preallocated file beside the ledger, so the
//     filesystem has room again for what is pending and for a
//     ledger_failed record saying why;
//  2. reports the failure through Err, which the governor checks before
//     it allows any change: while Err is not nil, changes are refused and
//     the refusals are recorded in the released room;
//  3. retries every RetryInterval: once it can allocate its reserve again
//     and commit what is pending, it appends a ledger_recovered record and
//     Err returns nil.
//
// Handles opened before the failure can still write (with kernel
// passthrough their writes never reach the daemon); their records wait in
// pending and are written at recovery. While failing, denial records
// beyond MaxPendingBytes are counted instead of kept (allowed changes are
// always kept); the recovery record gives the count.

// ReserveSuffix names the reserve file: agent_trace.jsonl.reserve.
const ReserveSuffix = ".reserve"

// ReserveBytes is the room kept for recording a failure, the refusals
// while it lasts and the recovery.
const ReserveBytes = 256 << 10

// RetryInterval is how often a failed ledger tries to recover.
const RetryInterval = 200 * time.Millisecond

// MaxPendingBytes bounds the denial records held in memory while the
// ledger cannot commit.
const MaxPendingBytes = 8 << 20

// failure is why the ledger cannot commit, and since when.
type failure struct {
	err   error
	since time.Time
}

// openReserve opens (creating) the reserve file and allocates its room.
// A filesystem without fallocate gets the room written as zeros.
func (w *Writer) openReserve() error {
	f, err := os.OpenFile(w.path+ReserveSuffix, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("opening the ledger's reserve: %w", err)
	}
	w.reserve = f
	if err := w.allocReserve(); err != nil {
		return fmt.Errorf("allocating the ledger's reserve of %d bytes: %w", ReserveBytes, err)
	}
	return nil
}

func (w *Writer) allocReserve() error {
	err := unix.Fallocate(int(w.reserve.Fd()), 0, 0, ReserveBytes)
	if errors.Is(err, unix.EOPNOTSUPP) {
		if _, err = w.reserve.WriteAt(make([]byte, ReserveBytes), 0); err == nil {
			err = w.reserve.Sync()
		}
	}
	return err
}

// releaseReserve gives the reserve's room back to the filesystem.
func (w *Writer) releaseReserve() {
	if err := w.reserve.Truncate(0); err != nil {
		w.opts.Log.Error("releasing the ledger's reserve failed", "err", err)
	}
}

// Err returns why the ledger cannot commit, nil while it can. Callers that
// allow changes must refuse them while it is not nil.
func (w *Writer) Err() error {
	if f := w.failed.Load(); f != nil {
		return f.err
	}
	if w.closed.Load() {
		// A closed ledger records nothing more: a change still asked for
		// (by a process that kept the mount alive) is refused, not made
		// unrecorded.
		return ErrClosed
	}
	return nil
}

// flushPending writes and syncs what is pending. On failure the file is
// cut back to its last committed size, so no partial line stays behind,
// and pending is kept for the next try.
func (w *Writer) flushPending() error {
	if len(w.pending) == 0 {
		return nil
	}
	n, err := w.f.Write(w.pending)
	if err == nil {
		start := time.Now()
		if err = w.f.Sync(); err == nil {
			w.noteFsync(time.Since(start))
			w.size += int64(n)
			w.pending = w.pending[:0]
			w.committed(w.pendingRecs)
			clear(w.pendingRecs)
			w.pendingRecs = w.pendingRecs[:0]
			return nil
		}
		err = fmt.Errorf("syncing ledger: %w", err)
	} else {
		err = fmt.Errorf("appending to ledger: %w", err)
	}
	if n > 0 {
		if terr := w.f.Truncate(w.size); terr != nil {
			err = errors.Join(err, fmt.Errorf("cutting a partial write: %w", terr))
		}
	}
	return err
}

// commitFailed handles a failed commit: the first failure releases the
// reserve, records itself and retries at once.
func (w *Writer) commitFailed(err error) error {
	w.setErr(err)
	if w.failed.Load() != nil {
		return err
	}
	w.failed.Store(&failure{err: err, since: time.Now()})
	w.releaseReserve()
	w.opts.Log.Error("the ledger cannot commit: changes are refused until it can", "err", err)
	w.appendLine(NewRecord(Change{Event: EventLedgerFailed, Code: "LEDGER_UNAVAILABLE",
		Reason: "the ledger could not be written (" + err.Error() + "); changes are refused until it can"}, w.opts.Version))
	if err := w.flushPending(); err != nil {
		w.setErr(err)
		return err
	}
	return nil
}

// tryRecover is called every RetryInterval while failing: it commits what
// is pending, takes back the reserve and records the recovery.
func (w *Writer) tryRecover() {
	if err := w.flushPending(); err != nil {
		w.setErr(err)
		return
	}
	if err := w.allocReserve(); err != nil {
		w.releaseReserve() // a partial allocation is room the ledger needs
		w.setErr(fmt.Errorf("the ledger's reserve cannot be allocated again: %w", err))
		return
	}
	f := w.failed.Load()
	reason := fmt.Sprintf("the ledger can be written again after %s", time.Since(f.since).Round(time.Millisecond))
	if w.droppedDenials > 0 {
		reason += fmt.Sprintf("; %d denial records could not be kept while it failed", w.droppedDenials)
	}
	w.appendLine(NewRecord(Change{Event: EventLedgerRecovered, Reason: reason}, w.opts.Version))
	if err := w.flushPending(); err != nil {
		w.setErr(err)
		return
	}
	w.droppedDenials = 0
	w.failed.Store(nil)
	w.opts.Log.Info("the ledger recovered; changes are allowed again", "after", time.Since(f.since))
}

// appendLine encodes a record onto pending.
func (w *Writer) appendLine(r *Record) {
	line, err := w.encode(r)
	if err != nil {
		w.opts.Log.Error("ledger record could not be encoded", "id", r.ID, "err", err)
		return
	}
	w.appended.Add(1)
	w.pending = append(w.pending, line...)
	if w.opts.Committed != nil {
		w.pendingRecs = append(w.pendingRecs, r)
	}
}
