package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// FileName is the ledger file, relative to the source directory.
const FileName = ".orchestration/agent_trace.jsonl"

// MaxCommitDelay bounds how long an appended record may wait before it is
// on disk.
const MaxCommitDelay = 100 * time.Millisecond

// Writer is the one appender of a ledger file. Records are queued by
// Append and written by a single goroutine that commits them in groups:
// whatever has queued up while the previous fsync ran is written and
// fsync'ed together, so a burst costs one fsync, and a lone record is on
// disk within MaxCommitDelay.
type Writer struct {
	f   *os.File
	rev func() string
	log *slog.Logger

	queue chan writeReq
	done  chan struct{}

	closeOnce sync.Once
	closed    atomic.Bool

	appended    atomic.Uint64
	commits     atomic.Uint64
	lastFsyncNs atomic.Int64
	maxFsyncNs  atomic.Int64
	writeErr    atomic.Pointer[error]
}

type writeReq struct {
	rec   *Record
	flush chan error // non-nil for a flush barrier
}

// WriterStats are the writer's counters for status.
type WriterStats struct {
	Appended     uint64  `json:"appended"`
	Commits      uint64  `json:"commits"`
	QueueDepth   int     `json:"queue_depth"`
	LastFsyncMs  float64 `json:"last_fsync_ms"`
	MaxFsyncMs   float64 `json:"max_fsync_ms"`
	LastWriteErr string  `json:"last_write_error,omitempty"`
}

// OpenWriter starts the writer on f, which must be open O_RDWR|O_APPEND.
// rev, if non-nil, returns the VCS revision to stamp on each record.
func OpenWriter(f *os.File, rev func() string, log *slog.Logger) (*Writer, error) {
	if err := ensureNewline(f); err != nil {
		return nil, fmt.Errorf("preparing ledger %s: %w", f.Name(), err)
	}
	w := &Writer{f: f, rev: rev, log: log, queue: make(chan writeReq, 4096), done: make(chan struct{})}
	go w.run()
	return w, nil
}

// ensureNewline makes sure the next record starts on a line of its own,
// even if a crash left the last line without its newline.
func ensureNewline(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()-1); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if b[0] != '\n' {
		_, err = f.Write([]byte("\n"))
	}
	return err
}

// ErrClosed is returned by Flush after Close.
var ErrClosed = errors.New("ledger writer closed")

// Append queues a record. It blocks only when the queue is full, which
// pushes back on the callers rather than losing records.
func (w *Writer) Append(r *Record) {
	if w.closed.Load() {
		w.log.Error("ledger record after close dropped", "id", r.ID)
		return
	}
	w.queue <- writeReq{rec: r}
}

// Flush returns once every record appended before it is on disk.
func (w *Writer) Flush() error {
	if w.closed.Load() {
		return ErrClosed
	}
	ch := make(chan error, 1)
	w.queue <- writeReq{flush: ch}
	return <-ch
}

// Close flushes and closes the ledger.
func (w *Writer) Close() error {
	var err error
	w.closeOnce.Do(func() {
		err = w.Flush()
		w.closed.Store(true)
		close(w.queue)
		<-w.done
		if cerr := w.f.Close(); err == nil {
			err = cerr
		}
	})
	return err
}

func (w *Writer) run() {
	defer close(w.done)
	var buf []byte
	var waiters []chan error
	for first := range w.queue {
		buf, waiters = buf[:0], waiters[:0]
		buf, waiters = w.add(buf, waiters, first)
		// Take whatever else is already queued: one write and one fsync
		// for the whole group.
	drain:
		for len(buf) < 4<<20 {
			select {
			case r, ok := <-w.queue:
				if !ok {
					break drain
				}
				buf, waiters = w.add(buf, waiters, r)
			default:
				break drain
			}
		}
		err := w.commit(buf)
		for _, ch := range waiters {
			ch <- err
		}
	}
}

func (w *Writer) add(buf []byte, waiters []chan error, r writeReq) ([]byte, []chan error) {
	if r.flush != nil {
		return buf, append(waiters, r.flush)
	}
	if w.rev != nil && r.rec.VCS == nil {
		if rev := w.rev(); rev != "" {
			r.rec.VCS = &VCS{Type: "git", Revision: rev}
		}
	}
	line, err := json.Marshal(r.rec)
	if err != nil {
		// Every field is a plain value; this cannot happen, but a record
		// must never be silently lost.
		w.log.Error("ledger record could not be encoded", "id", r.rec.ID, "err", err)
		return buf, waiters
	}
	w.appended.Add(1)
	buf = append(buf, line...)
	return append(buf, '\n'), waiters
}

func (w *Writer) commit(buf []byte) error {
	if len(buf) > 0 {
		if _, err := w.f.Write(buf); err != nil {
			w.setErr(err)
			return fmt.Errorf("appending to ledger: %w", err)
		}
	}
	start := time.Now()
	if err := w.f.Sync(); err != nil {
		w.setErr(err)
		return fmt.Errorf("syncing ledger: %w", err)
	}
	d := time.Since(start).Nanoseconds()
	w.lastFsyncNs.Store(d)
	if d > w.maxFsyncNs.Load() {
		w.maxFsyncNs.Store(d)
	}
	w.commits.Add(1)
	return nil
}

func (w *Writer) setErr(err error) {
	w.log.Error("ledger write failed", "err", err)
	w.writeErr.Store(&err)
}

// Stats returns the writer's counters.
func (w *Writer) Stats() WriterStats {
	s := WriterStats{
		Appended:    w.appended.Load(),
		Commits:     w.commits.Load(),
		QueueDepth:  len(w.queue),
		LastFsyncMs: float64(w.lastFsyncNs.Load()) / 1e6,
		MaxFsyncMs:  float64(w.maxFsyncNs.Load()) / 1e6,
	}
	if e := w.writeErr.Load(); e != nil {
		s.LastWriteErr = (*e).Error()
	}
	return s
}
