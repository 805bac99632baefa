// Package upstream keeps the daemon's private copy of the trusted upstream
// ref and answers questions about it.
//
// The trusted upstream is what a human declared in the policy file
// (policy.Upstream): a repository URL and a ref. The daemon fetches that
// ref itself into a bare mirror below the source's git directory
// (MirrorRel), with a clean environment (gitexec.StrictTransport: no user
// or repository configuration, ssh with -F none and only host keys the
// agent cannot write, HOME=/nonexistent), into
// a ref no agent command writes (TrustedRef). Nothing the agent's
// repository, its remotes or its fetched refs hold is trusted: only what
// this package fetched from the declared URL.
//
// Fetches never run in the FUSE request path: Kick starts one in the
// background, and Tip waits a bounded time for one already under way.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/policy"
)

// TrustedRef is the mirror's ref that holds the fetched upstream ref.
const TrustedRef = "refs/intentfs/upstream"

// Bounds of the mirror's work.
const (
	// FetchTimeout bounds one fetch; at the deadline git's whole process
	// group is killed.
	FetchTimeout = 60 * time.Second
	// Debounce is the least time between the starts of two background
	// fetches.
	Debounce = 2 * time.Second
	// MaxBlobBytes is the largest blob whose sha256 is computed; a larger
	// one has an empty Entry.SHA256 and is left out of History.Blobs, so
	// its content is never taken as upstream's.
	MaxBlobBytes = 64 << 20
	// MaxVersions bounds the commits Versions reads: the newest ones
	// touching the path.
	MaxVersions = 256
	// maxCache bounds the remembered Entry and Versions answers.
	maxCache = 4096
	// maxErrLen bounds the last error kept for Status.
	maxErrLen = 2048
)

// ErrNotConfigured is returned when the policy declares no upstream.
var ErrNotConfigured = errors.New("no upstream is configured: declare one with a top-level `upstream: {url: ..., ref: ...}` in the policy file")

// ErrNoTip is returned when the upstream has never been fetched
// successfully since it was configured.
var ErrNoTip = errors.New("the upstream has not been fetched")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("the upstream mirror is closed")

// Tip is the upstream ref's commit as last fetched.
type Tip struct {
	URL, Ref, Commit string
	FetchedAt        time.Time
}

// Status is what `intentfs status` shows of the mirror.
type Status struct {
	Configured bool      `json:"configured"`
	URL        string    `json:"url,omitempty"`
	Ref        string    `json:"ref,omitempty"`
	Commit     string    `json:"commit,omitempty"`
	FetchedAt  time.Time `json:"fetched_at,omitzero"`
	// Fetching is set while a fetch is under way or queued.
	Fetching bool `json:"fetching,omitempty"`
	// LastErr is why the last fetch failed, "" after a success.
	LastErr string `json:"last_error,omitempty"`
	// Mirror is the mirror's path.
	Mirror string `json:"mirror"`
	// Fetches counts the fetches started since New.
	Fetches int `json:"fetches"`
}

// Mirror is the daemon's private copy of the trusted upstream ref of one
// source. It is safe for concurrent use.
type Mirror struct {
	source string
	log    *slog.Logger

	// ctx ends at Close, stopping background fetches.
	ctx    context.Context
	cancel context.CancelFunc
	// readCtx bounds the cat-file process; it ends after the fetches.
	readCtx    context.Context
	readCancel context.CancelFunc
	wg         sync.WaitGroup

	// fetchMu serialises fetches, and the mirror's creation.
	fetchMu sync.Mutex

	mu  sync.Mutex
	cfg *policy.Upstream
	// gen counts configurations: a fetch started under an older one is
	// not installed.
	gen     uint64
	tip     Tip
	lastErr string
	// running is set while the background worker lives; queued while a
	// Kick waits for its fetch to start.
	running, queued bool
	// syncs counts Refresh calls under way.
	syncs int
	// idle is closed when no fetch is under way or queued (nil then).
	idle        chan struct{}
	lastStart   time.Time
	fetches     int
	cancelFetch context.CancelFunc
	closed      bool
	repo        *gitexec.Repo
	blobs       *gitexec.Blobs
	// knownHosts is the trusted known_hosts file besides the system's
	// ("": none; SetKnownHosts).
	knownHosts string
	cache      map[cacheKey]any
}

// New returns the mirror of the repository at source (the workspace's
// source directory, the top of its work tree). Nothing is fetched until an
// upstream is configured.
func New(source string, log *slog.Logger) *Mirror {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Mirror{source: source, log: log.With("component", "upstream"), cache: map[cacheKey]any{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.readCtx, m.readCancel = context.WithCancel(context.Background())
	return m
}

// Path returns the mirror's path.
func (m *Mirror) Path() string { return filepath.Join(m.source, MirrorRel) }

// Configure sets the upstream from the policy (nil: none). A different URL
// or ref drops the tip, cancels a fetch under way and starts a new one.
func (m *Mirror) Configure(u *policy.Upstream) {
	m.mu.Lock()
	if m.closed || (u == nil && m.cfg == nil) || (u != nil && m.cfg != nil && u.URL == m.cfg.URL && u.Ref == m.cfg.Ref) {
		m.mu.Unlock()
		return
	}
	if u == nil {
		m.cfg = nil
		m.log.Info("upstream removed from the policy")
	} else {
		c := *u
		m.cfg = &c
		m.log.Info("upstream configured", "url", u.URL, "ref", u.Ref)
	}
	m.gen++
	m.tip, m.lastErr = Tip{}, ""
	clear(m.cache)
	if m.cancelFetch != nil {
		m.cancelFetch()
	}
	m.mu.Unlock()
	m.Kick()
}

// Kick starts a fetch in the background and returns at once. At most one
// fetch is under way and one queued; a fetch starts at most once per
// Debounce. Without an upstream it does nothing.
func (m *Mirror) Kick() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.cfg == nil {
		return
	}
	m.queued = true
	if m.running {
		return
	}
	m.running = true
	m.markBusy()
	m.wg.Add(1)
	go m.worker()
}

// worker runs queued fetches until none is left.
func (m *Mirror) worker() {
	defer m.wg.Done()
	for {
		m.mu.Lock()
		wait := time.Until(m.lastStart.Add(Debounce))
		m.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-m.ctx.Done():
			}
			t.Stop()
		}
		m.mu.Lock()
		stop := m.ctx.Err() != nil
		m.queued = false
		m.mu.Unlock()
		if !stop {
			_ = m.refresh(m.ctx) // logged, and kept for Status
		}
		m.mu.Lock()
		if stop || !m.queued || m.ctx.Err() != nil {
			m.running, m.queued = false, false
			m.maybeIdle()
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
	}
}

// Refresh fetches the upstream now and waits for it: for a fetch already
// under way to end, then at most FetchTimeout (or until ctx ends) for its
// own. It is for callers that may block (start-up, a CLI request), never
// the filesystem's requests (use Kick).
func (m *Mirror) Refresh(ctx context.Context) error {
	m.mu.Lock()
	m.syncs++
	m.markBusy()
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.syncs--
		m.maybeIdle()
		m.mu.Unlock()
	}()
	return m.refresh(ctx)
}

// markBusy notes that a fetch is under way or queued; m.mu is held.
func (m *Mirror) markBusy() {
	if m.idle == nil {
		m.idle = make(chan struct{})
	}
}

// maybeIdle wakes Tip's waiters when no fetch is left; m.mu is held.
func (m *Mirror) maybeIdle() {
	if !m.running && m.syncs == 0 && m.idle != nil {
		close(m.idle)
		m.idle = nil
	}
}

// refresh fetches the configured ref and installs its commit as the tip,
// unless the configuration changed meanwhile.
func (m *Mirror) refresh(ctx context.Context) error {
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	cfg, gen := m.cfg, m.gen
	if cfg == nil {
		m.mu.Unlock()
		return ErrNotConfigured
	}
	m.lastStart = time.Now()
	m.fetches++
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	m.cancelFetch = cancel
	m.mu.Unlock()

	start := time.Now()
	commit, err := m.fetch(ctx, cfg)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.cancelFetch = nil
	if gen != m.gen {
		return fmt.Errorf("the upstream changed in the policy while %s was fetched from %s: the result is discarded", cfg.Ref, cfg.URL)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("%w (fetching took longer than %v)", err, FetchTimeout)
		}
		m.lastErr = bound(err.Error())
		m.log.Warn("fetching the upstream failed", "url", cfg.URL, "ref", cfg.Ref, "err", err)
		return err
	}
	if commit != m.tip.Commit {
		clear(m.cache)
		m.log.Info("upstream fetched", "url", cfg.URL, "ref", cfg.Ref, "commit", commit, "took", time.Since(start).Round(time.Millisecond))
	}
	m.lastErr = ""
	m.tip = Tip{URL: cfg.URL, Ref: cfg.Ref, Commit: commit, FetchedAt: time.Now()}
	return nil
}

// fetch brings cfg's ref into the mirror and returns its commit. The URL
// and the refspec come after --end-of-options: neither can be an option.
func (m *Mirror) fetch(ctx context.Context, cfg *policy.Upstream) (string, error) {
	// The policy validated both; checked again because nothing but a URL
	// and a full ref may reach git's command line here.
	if err := policy.CheckUpstreamURL(cfg.URL); err != nil {
		return "", fmt.Errorf("upstream url %q: %w", cfg.URL, err)
	}
	if ref, err := policy.NormalizeUpstreamRef(cfg.Ref); err != nil || ref != cfg.Ref {
		return "", fmt.Errorf("upstream ref %q is not a valid full ref name", cfg.Ref)
	}
	repo, err := m.mirror(ctx)
	if err != nil {
		return "", err
	}
	args := append([]string{}, "fetch", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
		"--no-auto-maintenance", "--quiet", "--upload-pack="+uploadPack(cfg.URL), "--end-of-options",
		cfg.URL, "+"+cfg.Ref+":"+TrustedRef)
	if _, err := repo.StrictTransportOutput(ctx, args...); err != nil {
		return "", fmt.Errorf("fetching %s from the upstream %s: %w", cfg.Ref, cfg.URL, err)
	}
	commit, err := repo.Line(ctx, "rev-parse", "--verify", "--end-of-options", TrustedRef+"^{commit}")
	if err != nil || !gitexec.ValidOID(commit) {
		return "", fmt.Errorf("the upstream %s's %s is not a commit: %w", cfg.URL, cfg.Ref, err)
	}
	return commit, nil
}

// mirror returns the mirror repository, created if need be; fetchMu is
// held. It is checked (and made again if removed) before every fetch: a
// few system calls, against a fetch's network round trips.
func (m *Mirror) mirror(ctx context.Context) (*gitexec.Repo, error) {
	repo, err := openMirror(ctx, m.source)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := repo.SetKnownHosts(m.knownHosts); err != nil {
		return nil, err
	}
	m.repo = repo
	return repo, nil
}

// Tip waits up to wait for a fetch under way or queued (never starting
// one), then returns the tip. It returns ErrNotConfigured without an
// upstream, and an error wrapping ErrNoTip, with the last fetch's error,
// when no fetch has succeeded since the upstream was configured.
func (m *Mirror) Tip(ctx context.Context, wait time.Duration) (Tip, error) {
	m.mu.Lock()
	idle, configured := m.idle, m.cfg != nil
	m.mu.Unlock()
	if idle != nil && wait > 0 && configured {
		t := time.NewTimer(wait)
		select {
		case <-idle:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Tip{}, ctx.Err()
		}
		t.Stop()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closed:
		return Tip{}, ErrClosed
	case m.cfg == nil:
		return Tip{}, ErrNotConfigured
	case m.tip.Commit != "":
		return m.tip, nil
	case m.lastErr != "":
		return Tip{}, fmt.Errorf("%w: %s", ErrNoTip, m.lastErr)
	case m.idle != nil:
		return Tip{}, fmt.Errorf("%w yet: the first fetch of %s is under way", ErrNoTip, m.cfg.URL)
	}
	return Tip{}, fmt.Errorf("%w yet", ErrNoTip)
}

// Status reports the mirror's state.
func (m *Mirror) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Status{Configured: m.cfg != nil, Commit: m.tip.Commit, FetchedAt: m.tip.FetchedAt, Fetching: m.idle != nil, LastErr: m.lastErr, Mirror: m.Path(), Fetches: m.fetches}
	if m.cfg != nil {
		s.URL, s.Ref = m.cfg.URL, m.cfg.Ref
	}
	return s
}

// Close stops the background fetches and the reading process.
func (m *Mirror) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	if m.cancelFetch != nil {
		m.cancelFetch()
	}
	m.cancel()
	m.mu.Unlock()
	m.wg.Wait()
	m.fetchMu.Lock() // a Refresh under way ends (its fetch was cancelled)
	defer m.fetchMu.Unlock()
	m.mu.Lock()
	b := m.blobs
	m.blobs = nil
	m.mu.Unlock()
	var err error
	if b != nil {
		broken := b.Broken()
		if err = b.Close(); broken {
			err = nil // it failed before, and said so then
		}
	}
	m.readCancel()
	return err
}

// bound shortens an error message kept for Status.
func bound(s string) string {
	if len(s) <= maxErrLen {
		return s
	}
	return s[:maxErrLen] + "…"
}

// uploadPack is the program the fetch runs to serve the upstream: git's
// upload-pack, named here so that no configuration (remote.*.uploadpack)
// picks another. An upstream on a local path may belong to another user
// than the one the fetch runs as (the human's repository; the fetch runs
// as the owner of the agent's .git), and git refuses such a repository
// ("dubious ownership") unless safe.directory names it, which only the
// command line or the global configuration may; git clears -c settings
// for a local upload-pack, so they go on its own command line (run by
// the shell). The policy named the path: it is trusted as far as its ref
// is, and nothing else is exempted.
func uploadPack(url string) string {
	p := url
	if rest, ok := strings.CutPrefix(url, "file://"); ok {
		p = rest
	}
	if !filepath.IsAbs(p) {
		return "git-upload-pack"
	}
	dirs := []string{filepath.Clean(p)}
	if real, err := filepath.EvalSymlinks(p); err == nil && real != dirs[0] {
		dirs = append(dirs, real)
	}
	cmd := "git"
	for _, d := range dirs {
		cmd += " -c " + shellQuote("safe.directory="+d) + " -c " + shellQuote("safe.directory="+filepath.Join(d, ".git"))
	}
	return cmd + " upload-pack"
}

// shellQuote quotes s as one word for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
