package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/intentfs/intentfs/internal/gitchange"
	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitgate"
	"github.com/intentfs/intentfs/internal/gitnotes"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

var _ gitchange.Watcher = (*Daemon)(nil)

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
		Record:    d.Record,
		Committed: d.attachNotes,
		Log:       d.log,
	})
}

// WatchGit lets the commit-time check see changes in git directories.
func (d *Daemon) WatchGit(ctx context.Context, w gitchange.Change) (*policy.Decision, func()) {
	d.fetchedInMount(w.Req)
	return d.git.WatchGit(ctx, w)
}

// notesSync runs one notes sync at a time, and at most one more after it.
type notesSync struct {
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

// attachNotes attaches the records of the commits just made to them as
// git notes (refs/notes/intentfs), in the background and a moment later
// (notesDelay): the commit does not wait for it. Only the repository at the workspace root carries notes.
func (d *Daemon) attachNotes(gitDir string) {
	if gitDir != ".git" {
		return
	}
	n := &d.notes
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
			ok := d.syncNotes()
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

func (d *Daemon) syncNotes() bool {
	// What the sync attaches is signed: the checkpoint goes with it, to
	// HEAD's note (gitnotes attaches trailing checkpoints).
	d.checkpoint("notes sync")
	if err := d.FlushLedger(); err != nil {
		d.log.Warn("attaching notes: the ledger cannot be flushed", "err", err)
		return false
	}
	ctx, cancel := context.WithTimeout(d.notes.life, notesTimeout)
	defer cancel()
	gitDir := filepath.Join(d.cfg.Source, ".git")
	if d.worktreeGitDir != "" {
		gitDir = d.worktreeGitDir
	}
	repo, err := gitexec.Open(gitDir)
	if err != nil {
		d.log.Warn("attaching notes", "err", err)
		return false
	}
	res, err := gitnotes.SyncFrom(ctx, repo, d.LedgerPath(), "", ledger.KeepOf(d.engine.Snapshot().Intents.NotesInclude()), &d.notes.cursor)
	if err != nil {
		d.log.Warn("attaching notes failed; intentfs notes sync attaches them later", "err", err)
		return false
	}
	d.log.Info("notes attached", "records", res.Attached, "commits", len(res.Commits))
	return true
}
