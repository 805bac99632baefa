package daemon

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/intentfs/intentfs/internal/accept"
	"github.com/intentfs/intentfs/ledger"
)

// Accept records a human's acknowledgement of each path as it is now in
// the source (intentfs accept), through this mount's writer, so the
// ledger keeps one writer. Only the control socket reaches it, and so
// only the mount's owner or root; of those, a process of an agent
// session, or one working inside the mount, is refused: an agent must not
// acknowledge its own changes made behind the ledger's back.
func (d *Daemon) Accept(r accept.Request, by *ledger.Process) ([]accept.Result, error) {
	if by == nil {
		return nil, fmt.Errorf("accept needs a person behind it: %w", syscall.EPERM)
	}
	if err := accept.Validate(r); err != nil {
		return nil, err
	}
	// What the cached data path's writers wrote is recorded first: an
	// agent's change not yet in the ledger must not be accepted as the
	// human's.
	d.settleWrites()
	s, err := d.actors.sessionOf(by)
	switch {
	case err != nil:
		return nil, fmt.Errorf("accept refused: %v: %w", err, syscall.EPERM)
	case s != nil:
		return nil, fmt.Errorf("accept refused: pid %d runs in the agent session %s; only a human outside every session may accept changes (run intentfs accept from your own shell): %w", by.Pid, s.ID(), syscall.EPERM)
	}
	if cwd, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(int(by.Pid)), "cwd")); err == nil && within(d.cfg.Mountpoint, cwd) {
		return nil, fmt.Errorf("accept refused: pid %d works inside the mount %s; run intentfs accept from outside it, naming the mount with --mount: %w", by.Pid, d.cfg.Mountpoint, syscall.EPERM)
	}
	who := accept.Who{Uid: by.Uid}
	if u, err := user.LookupId(strconv.Itoa(int(by.Uid))); err == nil {
		who.Name = u.Username
	}
	var changes []ledger.Change
	var out []accept.Result
	now := time.Now()
	for _, p := range r.Paths {
		c, res, err := accept.Describe(d.cfg.Source, p, who, r.Reason, now)
		if err != nil {
			return nil, err
		}
		c.Process = by
		changes = append(changes, c)
		out = append(out, res)
	}
	for _, c := range changes {
		d.gov.Record(c)
	}
	if err := d.writer.Flush(); err != nil {
		return out, fmt.Errorf("recording the acceptance: %w", err)
	}
	d.log.Info("accepted", "by", who.String(), "paths", len(out))
	return out, nil
}

// within reports whether p is dir or below it.
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
