package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// FileName is the ledger file, relative to the source directory.
const FileName = ".orchestration/agent_trace.jsonl"

// MaxCommitDelay bounds how long an appended record may wait before it is
// on disk.
const MaxCommitDelay = 100 * time.Millisecond

// DefaultMaxBytes is the size at which a ledger file is rotated.
const DefaultMaxBytes = 256 << 20

// WriterOptions configure a Writer.
type WriterOptions struct {
	// Rev, if set, returns the VCS revision stamped on each record.
	Rev func() string
	Log *slog.Logger
	// Source and Version go into header records.
	Source, Version string
	// MaxBytes rotates the file when it would grow past this size
	// (DefaultMaxBytes if 0).
	MaxBytes int64
	// Committed, if set, is called with each record once it is on disk,
	// in the order of the ledger, from the writer's goroutine: it must
	// not block or change the record. A record that is never committed
	// (the writer closed while the ledger could not be written) is never
	// passed to it.
	Committed func(*Record)
}

// Writer is the one appender of a ledger. Records are queued by Append and
// written by a single goroutine that commits them in groups: whatever has
// queued up while the previous fsync ran is written and fsync'ed together,
// so a burst costs one fsync and a lone record is on disk within
// MaxCommitDelay. Each line carries the hash of the line before it.
type Writer struct {
	path string
	opts WriterOptions
	f    *os.File
	size int64
	// prev is the hash of the last line written, prevPublic the hash of
	// its public form; chain the chain's id.
	prev, prevPublic, chain string
	// rev is the VCS revision stamped on the records of the current
	// group, read once per group rather than once per record.
	rev string
	// public hashes each line's public form, keeping its buffers from
	// line to line.
	public publicHasher

	queue chan writeReq
	done  chan struct{}

	// pending holds encoded lines not yet committed (see failclosed.go);
	// reserve is the room kept for recording a failure.
	pending        []byte
	pendingRecs    []*Record
	droppedDenials int
	reserve        *os.File
	failed         atomic.Pointer[failure]

	closeOnce sync.Once
	closed    atomic.Bool

	appended    atomic.Uint64
	commits     atomic.Uint64
	rotations   atomic.Uint64
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
	Rotations    uint64  `json:"rotations"`
	QueueDepth   int     `json:"queue_depth"`
	LastFsyncMs  float64 `json:"last_fsync_ms"`
	MaxFsyncMs   float64 `json:"max_fsync_ms"`
	LastWriteErr string  `json:"last_write_error,omitempty"`
	// State is "ok", or "failing" while the ledger cannot commit and
	// changes are refused; Failure says why and FailingSince since when.
	State        string     `json:"state"`
	Failure      string     `json:"failure,omitempty"`
	FailingSince *time.Time `json:"failing_since,omitempty"`
}

// LineHash is the chain hash of one ledger line (without its newline).
func LineHash(line []byte) string {
	s := sha256.Sum256(line)
	return "sha256:" + hex.EncodeToString(s[:])
}

// OpenWriter opens the ledger at path for appending, creating it with a
// header record if it is new. A torn last line left by a crash is moved to
// path+".torn" and recorded, and the chain continues from the last whole
// line; no earlier line is touched.
func OpenWriter(path string, opts WriterOptions) (*Writer, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	w := &Writer{path: path, opts: opts, queue: make(chan writeReq, 4096), done: make(chan struct{})}
	if err := w.open(); err != nil {
		return nil, fmt.Errorf("opening ledger %s: %w", path, err)
	}
	if err := w.openReserve(); err != nil {
		w.f.Close()
		if w.reserve != nil {
			w.reserve.Close()
		}
		return nil, fmt.Errorf("opening ledger %s: %w", path, err)
	}
	go w.run()
	return w, nil
}

func (w *Writer) open() error {
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	w.f = f
	st, err := f.Stat()
	if err != nil {
		return err
	}
	w.size = st.Size()
	if w.size == 0 {
		// A new file: continue the chain of the newest rotated file, if
		// any, else start one.
		prev, prevPublic, chain, from := Genesis, Genesis, uuid.NewString(), ""
		if files, _ := Files(w.path); len(files) > 1 {
			last := files[len(files)-2]
			if l, err := lastLine(last); err == nil && l != nil {
				prev, from = LineHash(l), filepath.Base(last)
				// A line that has no public form (written by hand) leaves
				// the next record linked by prev alone.
				prevPublic, _ = PublicHash(l)
				if c := chainOf(last); c != "" {
					chain = c
				}
			}
		}
		w.prev, w.prevPublic, w.chain = prev, prevPublic, chain
		return w.writeNow(w.header(from))
	}
	w.chain = chainOf(w.path)
	torn, last, err := splitTail(f, w.size)
	if err != nil {
		return err
	}
	w.prev, w.prevPublic = Genesis, Genesis
	if last != nil {
		w.prev = LineHash(last)
		w.prevPublic, _ = PublicHash(last)
	}
	if len(torn) > 0 {
		return w.moveTorn(torn)
	}
	return nil
}

func (w *Writer) header(continues string) *Record {
	r := NewRecord(Change{Event: EventHeader, Reason: "intentfs ledger"}, w.opts.Version)
	g := r.Gov()
	g.Chain, g.Source, g.ContinuesIn = w.chain, w.opts.Source, continues
	return r
}

// moveTorn appends the torn bytes to the .torn side file, cuts them off
// the ledger and records that it happened.
func (w *Writer) moveTorn(torn []byte) error {
	side, err := os.OpenFile(w.path+".torn", os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	_, err = side.Write(append(append([]byte(nil), torn...), '\n'))
	if err == nil {
		err = side.Sync()
	}
	side.Close()
	if err != nil {
		return fmt.Errorf("saving the torn line: %w", err)
	}
	w.size -= int64(len(torn))
	if err := w.f.Truncate(w.size); err != nil {
		return err
	}
	r := NewRecord(Change{Event: EventTorn, Reason: fmt.Sprintf("a torn last line of %d bytes (a crash mid-write) was moved to %s", len(torn), filepath.Base(w.path)+".torn"),
		PostHash: LineHash(torn)}, w.opts.Version)
	w.opts.Log.Warn("ledger had a torn last line; moved aside", "bytes", len(torn))
	return w.writeNow(r)
}

// refreshRev reads the VCS revision for the next group of records.
func (w *Writer) refreshRev() {
	if w.opts.Rev != nil {
		w.rev = w.opts.Rev()
	}
}

// writeNow writes and syncs one record outside the queue (at open).
func (w *Writer) writeNow(r *Record) error {
	w.refreshRev()
	line, err := w.encode(r)
	if err != nil {
		return err
	}
	if _, err := w.f.Write(line); err != nil {
		return err
	}
	w.size += int64(len(line))
	if err := w.f.Sync(); err != nil {
		return err
	}
	w.committed([]*Record{r})
	return nil
}

// committed hands records that are on disk to the Committed hook.
func (w *Writer) committed(recs []*Record) {
	if w.opts.Committed == nil {
		return
	}
	for _, r := range recs {
		w.opts.Committed(r)
	}
}

// encode stamps the chain and VCS fields and returns the line with its
// newline.
func (w *Writer) encode(r *Record) ([]byte, error) {
	r.finish()
	if r.VCS == nil && w.rev != "" {
		r.VCS = &VCS{Type: "git", Revision: w.rev}
	}
	r.Gov().Prev, r.Gov().PrevPublic = w.prev, w.prevPublic
	if r.seal != nil {
		r.seal(w.prev, w.prevPublic, w.chain)
		r.seal = nil
	}
	line, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	w.prev = LineHash(line)
	// A line this writer encoded is valid JSON and has a public form.
	w.prevPublic, _ = w.public.hash(line)
	return append(line, '\n'), nil
}

// splitTail finds the last whole line and any torn bytes after it,
// reading backwards until the last whole line is complete.
func splitTail(f *os.File, size int64) (torn, last []byte, err error) {
	const chunk = 64 << 10
	var buf []byte
	for off := size; off > 0 && bytes.Count(buf, []byte{'\n'}) < 2; {
		n := min(int64(chunk), off)
		off -= n
		b := make([]byte, n, n+int64(len(buf)))
		if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, err
		}
		buf = append(b, buf...)
	}
	if len(buf) > 0 && buf[len(buf)-1] != '\n' {
		i := bytes.LastIndexByte(buf, '\n')
		torn, buf = buf[i+1:], buf[:i+1]
	}
	buf = bytes.TrimSuffix(buf, []byte{'\n'})
	if len(buf) > 0 {
		last = buf[bytes.LastIndexByte(buf, '\n')+1:]
	}
	return torn, last, nil
}

// lastLine returns the last whole line of a closed ledger file.
func lastLine(path string) ([]byte, error) {
	f, err := openRead(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	_, last, err := splitTail(f, st.Size())
	return last, err
}

// chainOf reads the chain id from a file's header line.
func chainOf(path string) string {
	var chain string
	_ = ScanFile(path, func(_ int, raw []byte) error {
		var r Record
		if json.Unmarshal(raw, &r) == nil && r.Gov().Event == EventHeader {
			chain = r.Gov().Chain
		}
		return errStop
	})
	return chain
}

var errStop = errors.New("stop")

// ErrClosed is returned by Flush after Close.
var ErrClosed = errors.New("ledger writer closed")

// Append queues a record. It blocks only when the queue is full, which
// pushes back on the callers rather than losing records.
func (w *Writer) Append(r *Record) {
	if w.closed.Load() {
		w.opts.Log.Error("ledger record after close dropped", "id", r.ID)
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
		if len(w.pending) > 0 {
			err = errors.Join(err, fmt.Errorf("%d bytes of ledger records could not be written: %w", len(w.pending), w.Err()))
			w.opts.Log.Error("closing the ledger with records that could not be written", "bytes", len(w.pending))
		}
		if cerr := w.f.Close(); err == nil {
			err = cerr
		}
		w.reserve.Close()
	})
	return err
}

func (w *Writer) run() {
	defer close(w.done)
	retry := time.NewTicker(RetryInterval)
	defer retry.Stop()
	var waiters []chan error
	for {
		var first writeReq
		var ok bool
		select {
		case first, ok = <-w.queue:
		case <-retry.C:
			if w.failed.Load() != nil {
				w.tryRecover()
			}
			continue
		}
		if !ok {
			// Closing: a last try for what could not be written.
			if len(w.pending) > 0 {
				w.tryRecover()
			}
			return
		}
		waiters = waiters[:0]
		w.refreshRev()
		waiters = w.add(waiters, first)
		// Take whatever else is already queued: one write and one fsync
		// for the whole group.
	drain:
		for len(w.pending) < 4<<20 {
			select {
			case r, ok := <-w.queue:
				if !ok {
					break drain
				}
				waiters = w.add(waiters, r)
			default:
				break drain
			}
		}
		err := w.commit()
		for _, ch := range waiters {
			ch <- err
		}
	}
}

func (w *Writer) add(waiters []chan error, r writeReq) []chan error {
	if r.flush != nil {
		return append(waiters, r.flush)
	}
	if w.size+int64(len(w.pending)) >= w.opts.MaxBytes && w.size > 0 && w.failed.Load() == nil {
		// Full: write what is pending to this file, then start the next.
		if err := w.commit(); err == nil {
			if err := w.rotate(); err != nil {
				w.setErr(fmt.Errorf("rotating the ledger: %w", err))
			}
		}
	}
	if w.failed.Load() != nil && r.rec.Gov().Event == EventDenied && len(w.pending) >= MaxPendingBytes {
		// Memory is bounded while the ledger fails; denials are counted,
		// allowed changes are always kept.
		w.droppedDenials++
		return waiters
	}
	w.appendLine(r.rec)
	return waiters
}

// rotate closes the full file as agent_trace.N.jsonl and opens a new one
// whose header continues the chain.
func (w *Writer) rotate() error {
	files, err := Files(w.path)
	if err != nil {
		return err
	}
	next := len(files) // rotated files are numbered 1..n-1
	rotated := rotatedName(w.path, next)
	if err := w.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(w.path, rotated); err != nil {
		return err
	}
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	w.f, w.size = f, 0
	w.rotations.Add(1)
	return w.writeNow(w.header(filepath.Base(rotated)))
}

// commit writes and syncs what is pending; a failure makes the ledger
// fail closed (see failclosed.go). It returns nil once everything
// appended so far is on disk.
func (w *Writer) commit() error {
	if len(w.pending) == 0 && w.failed.Load() != nil {
		return nil
	}
	if len(w.pending) == 0 {
		// A bare flush still syncs, as before.
		start := time.Now()
		if err := w.f.Sync(); err != nil {
			return w.commitFailed(fmt.Errorf("syncing ledger: %w", err))
		}
		w.noteFsync(time.Since(start))
		return nil
	}
	if err := w.flushPending(); err != nil {
		return w.commitFailed(err)
	}
	return nil
}

// noteFsync counts a commit and its fsync time.
func (w *Writer) noteFsync(d time.Duration) {
	w.lastFsyncNs.Store(d.Nanoseconds())
	if d.Nanoseconds() > w.maxFsyncNs.Load() {
		w.maxFsyncNs.Store(d.Nanoseconds())
	}
	w.commits.Add(1)
}

func (w *Writer) setErr(err error) {
	w.opts.Log.Error("ledger write failed", "err", err)
	w.writeErr.Store(&err)
}

// Stats returns the writer's counters.
func (w *Writer) Stats() WriterStats {
	s := WriterStats{
		Appended:    w.appended.Load(),
		Commits:     w.commits.Load(),
		Rotations:   w.rotations.Load(),
		QueueDepth:  len(w.queue),
		LastFsyncMs: float64(w.lastFsyncNs.Load()) / 1e6,
		MaxFsyncMs:  float64(w.maxFsyncNs.Load()) / 1e6,
	}
	if e := w.writeErr.Load(); e != nil {
		s.LastWriteErr = (*e).Error()
	}
	s.State = "ok"
	if f := w.failed.Load(); f != nil {
		since := f.since
		s.State, s.Failure, s.FailingSince = "failing", f.err.Error()+": changes are refused until the ledger can be written", &since
	}
	return s
}
