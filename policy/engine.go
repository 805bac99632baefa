package policy

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// IntentsFile is the policy file, relative to the source directory.
const IntentsFile = OrchestrationDir + "/active_intents.yaml"

// ReloadInterval is how often the engine looks for edits; a change takes
// effect within this interval.
const ReloadInterval = 250 * time.Millisecond

// Engine holds the policy in force for one source directory and reloads it
// when a human edits the files. An invalid edit leaves the last valid policy
// in force and is reported; it never falls back to allowing everything.
type Engine struct {
	source   string
	failOpen bool
	log      *slog.Logger

	current atomic.Pointer[Snapshot]

	mu        sync.Mutex
	stamps    []fileStamp
	loadErr   error
	warnings  []Diagnostic
	loadedAt  time.Time
	reloadCnt int
}

type fileStamp struct {
	exists           bool
	ino, size        uint64
	mtimeNs, ctimeNs int64
}

// NewEngine loads the policy of source. It fails if the policy is missing
// or invalid: a mount must not start without one.
func NewEngine(source string, failOpen bool, log *slog.Logger) (*Engine, error) {
	e := &Engine{source: source, failOpen: failOpen, log: log}
	e.stamps = e.readStamps()
	snap, warns, err := e.load()
	if err != nil {
		return nil, err
	}
	e.current.Store(snap)
	e.warnings = warns
	e.loadedAt = time.Now()
	for _, w := range warns {
		log.Warn("policy warning", "diagnostic", w.String())
	}
	return e, nil
}

// Snapshot returns the policy in force. It never blocks.
func (e *Engine) Snapshot() *Snapshot { return e.current.Load() }

// FailOpen reports whether undecidable changes are allowed.
func (e *Engine) FailOpen() bool { return e.failOpen }

func (e *Engine) watched() []string {
	out := []string{filepath.Join(e.source, IntentsFile)}
	for _, f := range IgnoreFiles() {
		out = append(out, filepath.Join(e.source, f))
	}
	return out
}

func (e *Engine) readStamps() []fileStamp {
	files := e.watched()
	out := make([]fileStamp, len(files))
	for i, f := range files {
		var st syscall.Stat_t
		// Lstat: a symlink is refused by the load, not followed here.
		if err := syscall.Lstat(f, &st); err == nil {
			out[i] = fileStamp{exists: true, ino: st.Ino, size: uint64(st.Size), mtimeNs: st.Mtim.Nano(), ctimeNs: st.Ctim.Nano()}
		}
	}
	return out
}

func (e *Engine) load() (*Snapshot, []Diagnostic, error) {
	intents, warns, err := LoadIntentsFrom(e.source, IntentsFile)
	if err != nil {
		return nil, warns, err
	}
	ig, igWarns, err := LoadIgnore(e.source)
	if err != nil {
		return nil, append(warns, igWarns...), err
	}
	return &Snapshot{Intents: intents, Ignore: ig, FailOpen: e.failOpen}, append(warns, igWarns...), nil
}

// Reload re-reads the policy if any of its files changed. It returns the
// load error, if the new version is invalid; the previous snapshot then
// stays in force.
func (e *Engine) Reload() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	stamps := e.readStamps()
	if slices.Equal(stamps, e.stamps) {
		return e.loadErr
	}
	e.stamps = stamps
	snap, warns, err := e.load()
	if err != nil {
		e.loadErr = err
		e.log.Error("policy edit rejected; the last valid policy stays in force", "err", err)
		return err
	}
	e.current.Store(snap)
	e.loadErr = nil
	e.warnings = warns
	e.loadedAt = time.Now()
	e.reloadCnt++
	e.log.Info("policy reloaded", "intents", len(snap.Intents.List), "warnings", len(warns))
	return nil
}

// Watch reloads the policy every ReloadInterval until ctx ends.
func (e *Engine) Watch(ctx context.Context) {
	t := time.NewTicker(ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = e.Reload() // logged and reported by State
		}
	}
}

// EngineState is what status reports about the policy.
type EngineState struct {
	File        string       `json:"file"`
	LoadedAt    time.Time    `json:"loaded_at"`
	Reloads     int          `json:"reloads"`
	Intents     int          `json:"intents"`
	FailOpen    bool         `json:"fail_open"`
	ReloadError string       `json:"reload_error,omitempty"`
	Warnings    []Diagnostic `json:"warnings,omitempty"`
}

// State describes the policy in force and the last reload problem.
func (e *Engine) State() EngineState {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := EngineState{File: filepath.Join(e.source, IntentsFile), LoadedAt: e.loadedAt, Reloads: e.reloadCnt,
		FailOpen: e.failOpen, Warnings: e.warnings}
	if s := e.current.Load(); s != nil {
		st.Intents = len(s.Intents.List)
	}
	if e.loadErr != nil {
		st.ReloadError = e.loadErr.Error()
	}
	return st
}

// HasPolicy reports whether source has a policy file.
func HasPolicy(source string) bool {
	_, err := os.Stat(filepath.Join(source, IntentsFile))
	return err == nil
}
