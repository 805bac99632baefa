package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/intentfs/intentfs/internal/gitchange"
	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitgate"
	"github.com/intentfs/intentfs/internal/gitlayout"
	"github.com/intentfs/intentfs/internal/gitnotes"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// gitWatcher is the commit gate as the filesystem sees it
// (gitchange.Watcher): each change inside a git directory goes to the
// gate before it is made, and a fetch the agent's git made starts a
// refresh of the upstream mirror.
type gitWatcher struct {
	gate     *gitgate.Gate
	upstream *upstreamSource
}

var _ gitchange.Watcher = (*gitWatcher)(nil)

const (
	// notesTimeout bounds one attaching of notes after a commit.
	notesTimeout = time.Minute
	// notesDelay is how long a sync waits for more commits: commits come
	// in bursts (a rebase, an agent's commit loop), and one sync, which
	// reads the whole ledger and the notes, covers them all.
	notesDelay = time.Second
	// notesRetries bounds the syncs tried again after one fails.
	notesRetries = 3
)

// newGitGate connects the commit-time check (see gitgate) to the daemon.
func (d *Daemon) newGitGate() *gitgate.Gate {
	return gitgate.New(gitgate.Config{
		Source:         d.cfg.Source,
		WorktreeGitDir: d.worktreeGitDir,
		CommonDir:      d.commonDir,
		CheckedOut:     d.checkedOut,
		Records: func(fn func(*ledger.Record)) error {
			if err := d.FlushLedger(); err != nil {
				return err
			}
			err := ledger.Scan(d.LedgerPath(), func(_ int, r *ledger.Record) error { fn(r); return nil })
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		},
		Snapshot:  d.engine.Snapshot,
		Process:   d.procs.Lookup,
		Record:    d.gov.Record,
		Committed: d.notes.attach,
		Log:       d.log,
	})
}

// checkedOut lists the branches the other work trees of a linked
// worktree's repository have checked out, read from its common directory
// (which the mount's sessions cannot reach, but the daemon can).
func (d *Daemon) checkedOut() (map[string]gitlayout.Holder, error) {
	return gitlayout.CheckedOut(d.commonDir, d.worktreeGitDir)
}

// WatchGit lets the commit-time check see changes in git directories.
func (w *gitWatcher) WatchGit(ctx context.Context, c gitchange.Change) (*policy.Decision, func()) {
	w.upstream.fetchedInMount(c.Req)
	return w.gate.WatchGit(ctx, c)
}

// notesSync attaches the ledger's records to the commits they led to,
// as git notes of the repository at the workspace root: one sync at a
// time, and at most one more after it.
type notesSync struct {
	source string
	// gitDir is where git runs for the mount's .git: the source's .git,
	// or a linked worktree's git directory.
	gitDir     string
	log        *slog.Logger
	engine     *policy.Engine
	ledgerPath string
	// flush writes the ledger's queued records; checkpoint signs them
	// (nothing without signing keys).
	flush      func() error
	checkpoint func(why string)

	mu      sync.Mutex
	running bool
	again   bool
	// cursor is where the last sync stopped; only the goroutine running
	// the sync touches it.
	cursor gitnotes.Cursor
	// life ends when the daemon closes, which stop does and then waits
	// for the sync in progress on wg.
	life context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
}

func newNotesSync(source string, log *slog.Logger, engine *policy.Engine, ledgerPath string, flush func() error, checkpoint func(string)) *notesSync {
	n := &notesSync{source: source, gitDir: filepath.Join(source, ".git"), log: log, engine: engine, ledgerPath: ledgerPath, flush: flush, checkpoint: checkpoint}
	n.life, n.stop = context.WithCancel(context.Background())
	return n
}

// close stops the syncs: none starts after it, and the one running has
// ended when it returns.
func (n *notesSync) close() {
	n.mu.Lock()
	n.stop()
	n.mu.Unlock()
	n.wg.Wait()
}

// attach attaches the records of the commits just made to them as
// git notes (refs/notes/intentfs), in the background and a moment later
// (notesDelay): the commit does not wait for it. Only the repository at the workspace root carries notes.
func (n *notesSync) attach(gitDir string) {
	if gitDir != ".git" {
		return
	}
	n.mu.Lock()
	if n.running {
		n.again = true
		n.mu.Unlock()
		return
	}
	if n.life.Err() != nil {
		n.mu.Unlock()
		return
	}
	n.running = true
	n.wg.Add(1)
	n.mu.Unlock()
	go func() {
		defer n.wg.Done()
		failed := 0
		for {
			select {
			case <-time.After(notesDelay):
			case <-n.life.Done():
				n.mu.Lock()
				n.running = false
				n.mu.Unlock()
				return
			}
			// The commits made until now are this sync's.
			n.mu.Lock()
			n.again = false
			n.mu.Unlock()
			ok := n.sync()
			if !ok && failed < notesRetries {
				// The notes ref may have moved under the sync: the
				// repository of a linked worktree is shared with other
				// mounts' daemons, which write it too.
				failed++
				continue
			}
			n.mu.Lock()
			if !n.again {
				n.running = false
				n.mu.Unlock()
				return
			}
			n.mu.Unlock()
		}
	}()
}

func (n *notesSync) sync() bool {
	// What the sync attaches is signed: the checkpoint goes with it, to
	// HEAD's note (gitnotes attaches trailing checkpoints).
	n.checkpoint("notes sync")
	if err := n.flush(); err != nil {
		n.log.Warn("attaching notes: the ledger cannot be flushed", "err", err)
		return false
	}
	ctx, cancel := context.WithTimeout(n.life, notesTimeout)
	defer cancel()
	repo, err := gitexec.Open(n.gitDir)
	if err != nil {
		n.log.Warn("attaching notes", "err", err)
		return false
	}
	res, err := gitnotes.SyncFrom(ctx, repo, n.ledgerPath, "", ledger.KeepOf(n.engine.Snapshot().Intents.NotesInclude()), &n.cursor)
	if err != nil {
		n.log.Warn("attaching notes failed; intentfs notes sync attaches them later", "err", err)
		return false
	}
	n.log.Info("notes attached", "records", res.Attached, "commits", len(res.Commits))
	return true
}
