// Package daemon runs one governed mount: it loads the policy, takes the
// source's lock, opens the ledger, mounts the filesystem and serves the
// control socket, and tears all of it down in order on unmount.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/internal/gitchange"
	"github.com/intentfs/intentfs/internal/gitlayout"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/otelexport"
	"github.com/intentfs/intentfs/internal/procinfo"
	"github.com/intentfs/intentfs/internal/rawfs"
	"github.com/intentfs/intentfs/internal/sidecar"
	"github.com/intentfs/intentfs/internal/upstream"
	"github.com/intentfs/intentfs/internal/upstreamplan"
	"github.com/intentfs/intentfs/internal/workflow"
	"github.com/intentfs/intentfs/internal/workspace"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Config describes one mount.
type Config struct {
	Source     string
	Mountpoint string
	// Intent, if set, is selected at start.
	Intent string
	// FailOpen allows changes that cannot be decided instead of denying.
	FailOpen bool
	// Debug logs every FUSE request.
	Debug   bool
	Version string
	Log     *slog.Logger
	// Registry is where the mount registers for the CLI.
	Registry mounts.Registry
	// Owner is the uid/gid of the human who mounted; they own the socket.
	OwnerUID, OwnerGID int
	// KeepMaxBytes is the largest file whose pre-images are kept (0: the
	// default, 64 MiB; negative: none are kept); above it only hashes are
	// recorded.
	KeepMaxBytes int64
	// StoreMaxBytes bounds the pre-images the daemon copies into the
	// object store (0: the default, objects.DefaultBound of its
	// filesystem; those hard-linked from removed files are not copies). A change whose
	// pre-image the bound or the filesystem's space for unprivileged
	// users cannot take is refused (PREIMAGE_UNAVAILABLE).
	StoreMaxBytes int64
	// LedgerMaxBytes rotates the ledger at this size (0: the default).
	LedgerMaxBytes int64
	// LessonsFile names the file in .orchestration/ that lessons go to
	// (default CLAUDE.md).
	LessonsFile string
	// AllowNonEmpty mounts over a directory that has entries of its own,
	// hiding them while mounted; without it such a mountpoint is refused.
	AllowNonEmpty bool
	// MaxHandlesPerUID bounds the open files one uid may hold through the
	// mount (0: a quarter of the daemon's descriptor limit).
	MaxHandlesPerUID int
	// MaxCachedDirs bounds the directory descriptors the mount keeps open
	// between calls (0: a quarter of the daemon's descriptor limit).
	MaxCachedDirs int
	// UpstreamKnownHosts is a known_hosts file the human controls that
	// the declared upstream's fetch trusts besides the system's
	// (upstream.CheckKnownHosts); "": the system's alone.
	UpstreamKnownHosts string
	// Transport is how the kernel's requests reach the daemon:
	// TransportAuto, TransportURing or TransportDev ("": DefaultTransport).
	Transport string
	// DataPath is how reads and writes of existing files reach the
	// source: fsnode.DataPathPassthrough or fsnode.DataPathCached ("":
	// fsnode.DefaultDataPath).
	DataPath string
	// AgentFiles names the instruction files at the workspace root in
	// which intentfs keeps a section with the agent guide and the recent
	// lessons: "auto" (CLAUDE.md and AGENTS.md where present, else
	// CLAUDE.md), "" or "none" for none (the zero value changes nothing in
	// the source; the CLI defaults to "auto"), or a comma-separated list.
	AgentFiles string
	// Export, if set, streams every ledger record to an OTLP receiver
	// (see internal/otelexport); its Source, Mountpoint and
	// ServiceVersion are filled in from this config.
	Export *otelexport.Config
	// SigningKeys are SSH private key files the daemon signs the
	// ledger's checkpoints with (see signing.go); none: records are
	// unsigned.
	SigningKeys []string
}

// objectStore is the mount's bounded store once the mount has set it up,
// and before that (agent files published while starting) the unbounded
// store of the source, which still never writes past f_bavail.
func (d *Daemon) objectStore() *objects.Store {
	if d.store != nil {
		return d.store
	}
	return d.layout.Objects()
}

// sessionEndTimeout bounds the wait for killed sessions to end.
const sessionEndTimeout = 5 * time.Second

// mapFlushInterval batches intent_map.md rewrites.
const mapFlushInterval = time.Second

// Daemon is a running mount. It wires the parts that serve the mount
// together at Start, and takes them down in order at Close: the
// governor the filesystem calls (gov), the placement of callers and
// their intents (actors), the upstream source and the commit gate the
// filesystem asks (upstream, git), and the control plane
// (controlBackend).
type Daemon struct {
	cfg Config
	log *slog.Logger
	// worktreeGitDir and commonDir, for a linked worktree, are the
	// directories the mount's .git stands for.
	worktreeGitDir, commonDir string
	// store is the bounded object store of pre-images.
	store  *objects.Store
	engine *policy.Engine
	writer *ledger.Writer
	procs  *procinfo.Cache
	root   *fsnode.Root
	server server
	// transport is how requests arrive: TransportURing or TransportDev.
	transport string
	// mounted is what Status reports of the mount once it is up. The
	// transport serves requests (Status among them, through
	// .intentfs/status) before mountTransport has returned server and
	// transport, so Status must not read those fields.
	mounted atomic.Pointer[mountedInfo]
	ops     *rawfs.OpCounter
	ctl     *control.Server
	// ctlDir is the mount's .intentfs/ directory, whose files the kernel
	// is told of when their content changes; nil before the mount.
	ctlDir  *control.Dir
	layout  workspace.Layout
	opened  *workspace.Opened
	started time.Time
	stopW   func()
	// cacheTimeout is how long the kernel keeps entries and attributes:
	// long when the source is watched (see srcwatch.go).
	cacheTimeout time.Duration

	// gov records and shows every change and refusal.
	gov *governor
	// actors places callers in agent sessions and keeps their intents.
	actors *actors
	// upstream is the daemon's view of the declared upstream.
	upstream *upstreamSource
	// git checks commits made in the mount; notes attaches their records.
	git   *gitWatcher
	notes *notesSync
	// approvals holds changes for a human (the governor's queue).
	approvals *approvals.Queue
	// exporter copies the ledger's records to an OTLP receiver; nil when
	// none is configured.
	exporter *otelexport.Exporter

	wf         *workflow.Workflow
	lessons    *sidecar.Lessons
	imap       *sidecar.IntentMap
	agentFiles *sidecar.AgentFiles
	// signing is nil when the mount has no signing key.
	signing *signing

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// filesystem is the governor the filesystem is given: fsnode asks it for
// the upstream source and the git watcher by type assertion.
type filesystem struct {
	*governor
	*upstreamSource
	*gitWatcher
}

// fsnode finds the upstream source and the git watcher by asking the
// governor it is given for them: a filesystem that lost either would
// govern without them, silently.
var (
	_ upstreamplan.Source = filesystem{}
	_ gitchange.Watcher   = filesystem{}
)

// assemble builds the parts of a mount of cfg.Source up to the
// filesystem: the policy engine, the governor and the placement of
// callers, the commit gate, the upstream mirror, the opened source
// (lock, ledger writer, workflow). On failure it undoes what it did; on
// success the caller owns the returned undo, which closes what assemble
// opened, last first.
//
// Only err is a named result: the deferred undo below runs after a
// "return nil, nil, err" has set the results.
func assemble(cfg Config, keys *signing, worktree *gitlayout.Worktree) (_ *Daemon, _ func(), err error) {
	d := &Daemon{cfg: cfg, log: cfg.Log, procs: procinfo.NewCache(), started: time.Now(), closed: make(chan struct{}), signing: keys}
	if worktree != nil {
		d.worktreeGitDir, d.commonDir = worktree.GitDir, worktree.CommonDir
	}
	cleanup := []func(){}
	undo := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	defer func() {
		if err != nil {
			undo()
		}
	}()
	if d.layout, err = workspace.At(cfg.Source).WithLessonsFile(cfg.LessonsFile); err != nil {
		return nil, nil, err
	}
	d.imap = d.layout.IntentMap()
	if d.engine, err = policy.NewEngine(cfg.Source, cfg.FailOpen, cfg.Log); err != nil {
		return nil, nil, err
	}
	d.gov = newGovernor(cfg.Version, d.log, d.engine, d.procs, d.imap)
	d.approvals = d.gov.approvals
	d.actors = &actors{log: d.log, engine: d.engine, selects: newSelectLimiter(), gov: d.gov}
	d.gov.actors = d.actors
	d.notes = newNotesSync(cfg.Source, d.log, d.engine, d.layout.LedgerPath(), func() error {
		// The cached data path's writes are recorded before the notes
		// are taken from the ledger.
		d.settleWrites()
		return d.FlushLedger()
	}, d.checkpoint)
	if worktree != nil {
		d.notes.gitDir = worktree.GitDir
	}
	d.gov.git = d.newGitGate()
	d.upstream = &upstreamSource{mirror: upstream.New(cfg.Source, cfg.Log), engine: d.engine}
	d.git = &gitWatcher{gate: d.gov.git, upstream: d.upstream}
	cleanup = append(cleanup, func() {
		d.notes.close()
		d.git.gate.Close()
		d.upstream.mirror.Close()
	})
	if err = d.upstream.mirror.SetKnownHosts(cfg.UpstreamKnownHosts); err != nil {
		return nil, nil, err
	}
	if d.actors.sessions, err = agent.NewSessions(d.actors.ending, d.actors.ended); err != nil {
		return nil, nil, err
	}
	cleanup = append(cleanup, d.actors.sessions.Close)
	var committed func(*ledger.Record)
	if cfg.Export != nil {
		ec := *cfg.Export
		ec.Source, ec.Mountpoint, ec.ServiceVersion = cfg.Source, cfg.Mountpoint, cfg.Version
		ec.MountUIDs = []uint32{uint32(cfg.OwnerUID)}
		if d.exporter, err = otelexport.New(context.Background(), ec, cfg.Log); err != nil {
			return nil, nil, err
		}
		cleanup = append(cleanup, d.shutdownExport)
		committed = d.exporter.Offer
	}
	if d.opened, err = d.layout.Open(workspace.OpenOptions{Holder: "the mount at " + cfg.Mountpoint, Version: cfg.Version,
		Log: cfg.Log, LedgerMaxBytes: cfg.LedgerMaxBytes, Record: d.gov.Record, Changed: func() { _ = d.engine.Reload() },
		Committed: committed}); err != nil {
		return nil, nil, err
	}
	cleanup = append(cleanup, func() { d.opened.Close() })
	d.writer, d.lessons, d.wf = d.opened.Writer, d.opened.Lessons, d.opened.Workflow
	d.gov.writer, d.gov.lessons, d.actors.wf = d.writer, d.lessons, d.wf
	return d, undo, nil
}

// Start mounts cfg.Source at cfg.Mountpoint and returns once the mount
// is ready. On failure it undoes what it did and returns the cause.
//
// The result is not named d: the cleanup closures below capture d, and a
// "return nil, err" would set a named result to nil before they run.
func Start(cfg Config) (_ *Daemon, err error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Source, err = canonicalDir(cfg.Source, "source"); err != nil {
		return nil, err
	}
	if cfg.Mountpoint, err = canonicalDir(cfg.Mountpoint, "mountpoint"); err != nil {
		return nil, err
	}
	// The mount governs git through its .git directory: the source's own,
	// or, for a linked worktree, its git directory and the repository's
	// common directory served together as one (resolved here, once). A
	// .git symlink, or a .git file that does not lead to a worktree laid
	// out as git makes one, would lead git in the mount to a repository
	// it writes directly, past the commit gate and the notes.
	worktree, err := gitlayout.ResolveWorktree(cfg.Source)
	if err != nil {
		return nil, err
	}
	if worktree != nil {
		defer worktree.Close() // the root holds handles of its own
	}
	if cfg.Mountpoint == cfg.Source || isBelow(cfg.Mountpoint, cfg.Source) {
		return nil, fmt.Errorf("the mountpoint %s must not be inside the source %s", cfg.Mountpoint, cfg.Source)
	}
	if err := checkUmask(); err != nil {
		return nil, err
	}
	if err := CheckMountpoint(cfg.Mountpoint, cfg.AllowNonEmpty); err != nil {
		return nil, err
	}
	raiseFileLimit(cfg.Log)
	// The keys are read first, before anything else is set up: a key
	// that cannot be used must fail the mount, not leave records
	// unsigned.
	keys, err := loadSigningKeys(cfg)
	if err != nil {
		return nil, err
	}

	cleanup := []func(){}
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	d, undo, err := assemble(cfg, keys, worktree)
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, undo)
	// The store keeps content other users may not read: private before
	// anything is kept. Pre-images a crash left pending are filed under
	// their hashes.
	d.store = d.layout.Objects()
	if err = d.store.MakePrivate(); err != nil {
		return nil, err
	}
	d.store.AdoptPending()
	storeMax, err := d.store.SetBound(cfg.StoreMaxBytes)
	if err != nil {
		return nil, err
	}
	d.log.Info("object store bounded", "max_bytes", storeMax)
	if err = d.setupAgentFiles(); err != nil {
		return nil, err
	}
	d.publishAgentFiles()

	if cfg.Intent != "" {
		if err = d.actors.selectIntent(cfg.Intent, &ledger.Process{Pid: uint32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), Comm: "intentfs mount"}); err != nil {
			return nil, err
		}
	}

	ctlDir := control.NewDir(controlBackend{d}, d.gov.Process)
	d.ctlDir, d.gov.ctlDir = ctlDir, ctlDir
	keepMax := cfg.KeepMaxBytes
	switch {
	case keepMax == 0:
		keepMax = objects.DefaultKeepMaxBytes
	case keepMax < 0:
		keepMax = 0 // every non-empty file is over the limit
	}
	if d.root, err = fsnode.NewRoot(fsnode.Options{Source: cfg.Source, Governor: filesystem{d.gov, d.upstream, d.git}, Log: cfg.Log, ControlDir: ctlDir,
		Objects: d.store, KeepMaxBytes: keepMax, MaxHandlesPerUID: cfg.MaxHandlesPerUID,
		MaxCachedDirs: cfg.MaxCachedDirs, DataPath: cfg.DataPath, Worktree: worktree}); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { d.root.Close() })
	d.actors.root = d.root
	ctlDir.RunAsDaemon(d.root.AsDaemon)

	watch := d.watchSource()
	if watch != nil {
		cleanup = append(cleanup, func() { watch.Close() })
	}
	dataPath, err := fsnode.ParseDataPath(cfg.DataPath)
	if err != nil {
		return nil, err
	}
	// A linked worktree's .git lies outside the watched source: other
	// worktrees' mounts, the human's git and the daemon's notes change
	// the shared repository there, unseen by the watch. Its entries and
	// attributes must not be kept long (a stale size of packed-refs would
	// cut git's read of it).
	opts := mountOptions(cfg, watch != nil && worktree == nil, dataPath)
	d.cacheTimeout = *opts.EntryTimeout
	raw := fuse.RawFileSystem(rawfs.ElideOpendir(d.root.CallerScope(fs.NewNodeFS(d.root.Node(), opts))))
	var elider *fsnode.OpenElider
	if dataPath == fsnode.DataPathCached {
		elider = fsnode.ElideOpen(raw, d.root)
		raw = elider
		ctlDir.ServeWithoutHandles()
	}
	d.ops = rawfs.CountOps(raw)
	if d.server, d.transport, err = mountTransport(cfg.Transport, cfg.Mountpoint, d.ops, &opts.MountOptions, cfg.Log); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { undoMount(d.server, cfg.Mountpoint, cfg.Log) })
	if elider != nil && !elider.Eliding() {
		cfg.Log.Warn("the kernel cannot open files without OPEN (NO_OPEN_SUPPORT): serving the passthrough data path")
		dataPath = fsnode.DataPathPassthrough
	}
	d.mounted.Store(&mountedInfo{transport: d.transport, passthrough: d.passthrough() && dataPath != fsnode.DataPathCached, dataPath: dataPath})

	if err = cfg.Registry.Ensure(); err != nil {
		return nil, err
	}
	_, sock, logPath := cfg.Registry.Paths(cfg.Mountpoint)
	if d.ctl, err = control.Listen(sock, cfg.OwnerUID, cfg.OwnerGID, controlBackend{d}, cfg.Log); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { d.ctl.Close() })
	if err = cfg.Registry.Register(mounts.Entry{Mountpoint: cfg.Mountpoint, Source: cfg.Source, Pid: os.Getpid(),
		Socket: sock, Log: logPath, StartedAt: d.started}); err != nil {
		return nil, err
	}

	stop := make(chan struct{})
	ctx := stopContext(stop)
	go d.engine.Watch(ctx)
	if watch != nil {
		go d.runSourceWatch(ctx, watch)
	}
	go d.flushMapEvery(ctx, mapFlushInterval)
	go d.gov.summarizeDenialsEvery(ctx)
	go d.checkpointEvery(ctx)
	// The upstream is fetched before git needs it, so a pull does not
	// wait for a first fetch.
	d.upstream.configured().Kick()
	d.stopW = func() { close(stop) }
	d.log.Info("mounted", "source", cfg.Source, "mountpoint", cfg.Mountpoint, "passthrough", d.passthrough(), "transport", d.transport)
	return d, nil
}

// stopContext is a context that ends when stop is closed.
func stopContext(stop <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	return ctx
}

func mountOptions(cfg Config, watched bool, dataPath string) *fs.Options {
	// Entries and attributes are cached for long when the source is
	// watched (see srcwatch.go), else for a second: every change made
	// through the mount invalidates them, and a change made directly in
	// the source shows when the watcher sees it, or within that second.
	// Caching the negative answers matters too: tools probe for files
	// that are not there (git looks for .gitignore in every directory,
	// compilers search include paths), and each probe would otherwise be
	// a round trip.
	cache, negative := shortCache, shortCache
	if watched {
		cache = longCache
	}
	root := os.Geteuid() == 0
	opts := &fs.Options{
		EntryTimeout:    &cache,
		AttrTimeout:     &cache,
		NegativeTimeout: &negative,
		NullPermissions: true,
		MountOptions: fuse.MountOptions{
			// As root, the mount serves every user, and the kernel checks
			// each caller's permissions against the source's modes.
			AllowOther:  root,
			Options:     []string{"default_permissions"},
			FsName:      cfg.Source,
			Name:        "intentfs",
			DirectMount: root,
			Debug:       cfg.Debug,
			// HANDLE_KILLPRIV_V2: the daemon clears set-ID bits itself
			// (fsnode.killSuidGid), which spares the kernel a
			// security.capability GETXATTR round trip on every write.
			ExtraCapabilities: fuse.CAP_ATOMIC_O_TRUNC | fuse.CAP_HANDLE_KILLPRIV_V2,
			// fcntl and flock locks reach the source, so tools that lock
			// (sqlite, package managers) work as on the disk.
			EnableLocks: true,
			// POSIX ACLs are checked by the kernel, for every caller, as on
			// the source; without this, only mode bits were.
			EnableAcl: true,
		},
	}
	if dataPath == fsnode.DataPathCached {
		// With no OPEN, an O_TRUNC open would truncate nothing under
		// ATOMIC_O_TRUNC (the kernel leaves it to OPEN): without it, the
		// truncation comes as a SETATTR, which is decided.
		opts.ExtraCapabilities &^= fuse.CAP_ATOMIC_O_TRUNC
		// Locks need a handle to hold them at the source; with none, the
		// kernel keeps them itself, among the mount's users.
		opts.EnableLocks = false
		// An inode the kernel does passthrough I/O on cannot also be
		// opened without OPEN (the kernel fails that open with EIO), and
		// files it opens without OPEN get no passthrough: none at all.
		opts.DisabledCapabilities |= fuse.CAP_PASSTHROUGH
	}
	return opts
}

// mountedInfo is what is known of the mount once it is up.
type mountedInfo struct {
	transport   string
	passthrough bool
	dataPath    string
}

func (d *Daemon) passthrough() bool {
	return os.Geteuid() == 0 && d.server.KernelSettings().Flags64()&fuse.CAP_PASSTHROUGH != 0
}

func canonicalDir(p, what string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", fmt.Errorf("%s %s: %w", what, p, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", what, p, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s %s is not a directory", what, p)
	}
	return abs, nil
}

// isBelow reports whether p lies inside dir (not dir itself). A name
// that merely starts with two dots ("..cache") or is one character long
// is inside.
func isBelow(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// Wait blocks until the filesystem is unmounted, by Unmount, a signal
// handler or an external umount.
func (d *Daemon) Wait() { d.server.Wait() }

// Close finishes after the filesystem is gone: flushes and closes the
// ledger, stops the control socket, unregisters and releases the lock.
// It is safe to call more than once.
func (d *Daemon) Close() error {
	d.closeOnce.Do(func() {
		d.stopW()
		d.cfg.Registry.Unregister(d.cfg.Mountpoint)
		// Sessions still running end with the mount (an unmount from
		// outside, say); their end is recorded before the ledger closes.
		d.actors.endAll()
		d.actors.sessions.Close()
		d.gov.recordDenialSummaries(time.Now(), true)
		// The opened source closes the ledger (first, as before) and then
		// releases the lock, last, once nothing more is written.
		// A notes sync still running writes the repository and reads
		// the ledger: it ends before they are closed (and before the
		// caller of Unmount, told the mount is gone, removes them).
		d.notes.close()
		d.git.gate.Close()
		// The root first: what git removed outside the scope and did
		// not write again is put back, and recorded, before the ledger
		// closes.
		rootErr := d.root.Close()
		d.upstream.mirror.Close()
		// The last records are signed before the ledger closes.
		d.checkpoint("unmount")
		errs := []error{d.writer.Close(), rootErr, d.imap.Flush(), d.opened.Close()}
		// Every record is committed now: the stream gets what is left,
		// within its timeout. It is a copy, so its failure does not fail
		// the unmount.
		d.shutdownExport()
		d.procs.Close()
		d.closeErr = errors.Join(errs...)
		d.log.Info("unmounted", "mountpoint", d.cfg.Mountpoint, "records", d.writer.Stats().Appended)
		close(d.closed)
		// Last, so an `intentfs unmount` waiting on d.closed gets its
		// answer before the process exits.
		d.ctl.Close()
	})
	return d.closeErr
}

// Unmount unmounts the filesystem and returns once Close has flushed the
// ledger. The caller of Wait must call Close.
func (d *Daemon) Unmount() error {
	// Agent sessions hold copies of the mount in their own namespaces,
	// which would keep it served (and the unmount waiting) after it is
	// gone here: the mount's end is theirs too.
	if n := d.actors.endAll(); n > 0 {
		d.log.Info("ended the agent sessions of the workspace being unmounted", "sessions", n)
	}
	if err := d.server.Unmount(); err != nil {
		if errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("%s is busy: a process still has a file open or its working directory in it", d.cfg.Mountpoint)
		}
		return fmt.Errorf("unmounting %s: %w", d.cfg.Mountpoint, err)
	}
	select {
	case <-d.closed:
		return d.closeErr
	case <-time.After(30 * time.Second):
		return errors.New("unmounted, but the ledger did not finish flushing within 30s")
	}
}

// shutdownExport flushes the audit stream, waiting at most
// otelexport.ShutdownTimeout.
func (d *Daemon) shutdownExport() {
	if d.exporter == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), otelexport.ShutdownTimeout)
	defer cancel()
	if err := d.exporter.Shutdown(ctx); err != nil {
		d.log.Warn("the audit stream did not shut down cleanly", "err", err)
	}
	s := d.exporter.Stats()
	d.log.Info("audit stream closed", "endpoint", s.Endpoint, "exported", s.Exported, "failed", s.Failed, "dropped", s.Dropped)
}

// Mountpoint returns the canonical mountpoint.
func (d *Daemon) Mountpoint() string { return d.cfg.Mountpoint }

// Source returns the canonical source directory.
func (d *Daemon) Source() string { return d.cfg.Source }

// LedgerPath returns the ledger file.
func (d *Daemon) LedgerPath() string { return d.layout.LedgerPath() }

// FlushLedger returns once every record so far is on disk.
func (d *Daemon) FlushLedger() error { return d.writer.Flush() }

// checkUmask insists on a zero process umask. The kernel has already
// applied the caller's umask to the modes it sends; a daemon umask would
// mask them a second time (0664 from a umask-002 caller would become
// 0644). The umask is process-wide, so the program, not this package,
// sets it: see SetProcessUmask.
func checkUmask() error {
	old := syscall.Umask(0)
	syscall.Umask(old)
	if old != 0 {
		return fmt.Errorf("the process umask is %04o; a daemon process must run with umask 0 (call daemon.SetProcessUmask first)", old)
	}
	return nil
}

// raiseFileLimit raises the soft descriptor limit to the hard one: every
// open file of the mount is a descriptor of the daemon. (The Go runtime
// does this at start too; a program embedding the daemon may have lowered
// it since.) The per-uid share of handles is a quarter of it.
func raiseFileLimit(log *slog.Logger) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= lim.Max {
		return
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("could not raise the descriptor limit", "err", err)
	}
}

// SetProcessUmask sets the umask of the whole process to 0, as a daemon
// process needs. Call it once, at the start of a program that serves a
// mount.
func SetProcessUmask() { syscall.Umask(0) }

// flushMapEvery writes intent_map.md changes in batches.
func (d *Daemon) flushMapEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := d.imap.Flush(); err != nil {
				d.log.Error("updating intent_map.md failed", "err", err)
			}
		}
	}
}

// SocketPath returns the control socket the CLI talks to.
func (d *Daemon) SocketPath() string {
	_, sock, _ := d.cfg.Registry.Paths(d.cfg.Mountpoint)
	return sock
}
