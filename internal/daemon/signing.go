package daemon

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/ledgersign"
	"github.com/intentfs/intentfs/ledger"
)

const (
	// checkpointRecords and checkpointInterval are how often the chain is
	// signed while records come: after this many records, or this long
	// after the first record the last checkpoint does not cover.
	checkpointRecords  = 1000
	checkpointInterval = 30 * time.Second
	// checkpointPoll is how often the daemon looks whether one is due.
	checkpointPoll = time.Second
)

// signing holds the mount's signing keys, read once at start and kept in
// memory only, and the state of its checkpoints.
type signing struct {
	signer *ledgersign.Signer
	files  []string
	mu     sync.Mutex
	// covered is the writer's count of appended records right after the
	// last checkpoint; since when the first record after it is pending.
	covered     uint64
	since       time.Time
	checkpoints uint64
	last        time.Time
}

// loadSigningKeys reads the signing keys cfg names. A key inside the
// source or the mountpoint would be served by the mount, to whoever its
// mode lets read it; a key with another link could be reached by that
// name: both are refused.
func loadSigningKeys(cfg Config) (*signing, error) {
	if len(cfg.SigningKeys) == 0 {
		return nil, nil
	}
	var keys []ssh.Signer
	files := make([]string, 0, len(cfg.SigningKeys))
	for _, f := range cfg.SigningKeys {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
		if err != nil {
			return nil, fmt.Errorf("the signing key %s: %w", f, err)
		}
		abs = filepath.Join(dir, filepath.Base(abs))
		for _, d := range []string{cfg.Source, cfg.Mountpoint} {
			if abs == d || isBelow(abs, d) {
				return nil, fmt.Errorf("the signing key %s is inside %s, which the mount serves: keep it outside the workspace (for a root daemon, e.g. /etc/intentfs/signing_key, mode 0600, owned by root)", f, d)
			}
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(abs, &st); err == nil && st.Nlink > 1 {
			return nil, fmt.Errorf("the signing key %s has %d links: another name could reach it (one inside the workspace, say); give the daemon a key with one link", f, st.Nlink)
		}
		k, err := ledgersign.LoadKey(abs, cfg.OwnerUID)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
		files = append(files, abs)
	}
	return &signing{signer: ledgersign.NewSigner(rand.Reader, keys...), files: files}, nil
}

// checkpoint appends a signed checkpoint over the chain's head when there
// are records since the last one, and waits until it is on disk.
func (d *Daemon) checkpoint(why string) {
	s := d.signing
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Records still queued are counted once written.
	_ = d.writer.Flush()
	if d.writer.Stats().Appended == s.covered {
		return
	}
	d.writer.Append(ledger.NewCheckpoint(d.cfg.Version, s.signer.Sign))
	if err := d.writer.Flush(); err != nil {
		d.log.Warn("a signed checkpoint could not be written yet; the ledger writes it when it can", "why", why, "err", err)
	}
	s.covered = d.writer.Stats().Appended
	s.since = time.Time{}
	s.checkpoints++
	s.last = time.Now()
	d.log.Debug("signed checkpoint", "why", why)
}

// checkpointDue reports whether the records since the last checkpoint
// call for one now.
func (d *Daemon) checkpointDue(now time.Time) bool {
	s := d.signing
	s.mu.Lock()
	defer s.mu.Unlock()
	n := d.writer.Stats().Appended
	if n == s.covered {
		return false
	}
	if s.since.IsZero() {
		s.since = now
	}
	return n-s.covered >= checkpointRecords || now.Sub(s.since) >= checkpointInterval
}

// checkpointEvery signs the chain periodically while records come.
func (d *Daemon) checkpointEvery(ctx context.Context) {
	if d.signing == nil {
		return
	}
	t := time.NewTicker(checkpointPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if d.checkpointDue(now) {
				d.checkpoint("periodic")
			}
		}
	}
}

// signingStatus is the Signing part of the mount's status.
func (d *Daemon) signingStatus() control.Signing {
	s := d.signing
	if s == nil {
		return control.Signing{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := control.Signing{Signed: true, Keys: s.signer.Fingerprints(), KeyFiles: s.files, Checkpoints: s.checkpoints}
	if !s.last.IsZero() {
		last := s.last
		st.LastCheckpoint = &last
	}
	return st
}
