package daemon

import (
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

var (
	_ fsnode.Governor = (*Daemon)(nil)
)

func stopContext(stop <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	return ctx
}

// Snapshot returns the policy in force.
func (d *Daemon) Snapshot() *policy.Snapshot { return d.engine.Snapshot() }

// ActiveIntent returns the selected intent id.
func (d *Daemon) ActiveIntent() string {
	if p := d.active.Load(); p != nil {
		return *p
	}
	return ""
}

// Active is the intent in force for by, for the control plane.
func (d *Daemon) Active(by *ledger.Process) string { return d.intentFor(by) }

// Process describes the caller of a request.
func (d *Daemon) Process(c *fuse.Caller) *ledger.Process {
	if c == nil {
		return &ledger.Process{}
	}
	return d.procs.Lookup(c.Pid, c.Uid, c.Gid)
}

// Record appends a change to the ledger.
func (d *Daemon) Record(c ledger.Change) {
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	d.counters.recorded.Add(1)
	if ledger.ClassOf(c.Event) != "" {
		d.counters.allowed.Add(1)
		if c.Validation == string(policy.ValidationFail) {
			d.counters.wouldDeny.Add(1)
		}
		d.mapChange(c)
		if c.Session != nil {
			if s := d.sessions.Get(c.Session.ID); s != nil {
				s.CountChange()
			}
		}
	}
	if d.git != nil && c.PostHash != "" && c.RestoredFrom == "" && c.Event != ledger.EventAccept {
		// Content git wrote that already existed is not authorship.
		c.RestoredFrom = d.git.Restored(context.Background(), c.Path, c.PostHash, c.Process)
	}
	if d.git != nil {
		// The gate indexes the record as written: after the writer's
		// goroutine has completed it (a removal's pre_hash is computed
		// there), in that goroutine, so nothing reads it while it changes.
		git, finish := d.git, c.Finish
		c.Finish = func(r *ledger.Record) {
			if finish != nil {
				finish(r)
			}
			git.Add(r)
		}
	}
	d.writer.Append(ledger.NewRecord(c, d.cfg.Version))
	if d.feed.Active() {
		d.publishRecord(c)
	}
}

// Discarded records the removal of a provisional file the scope refused:
// shown as a refusal, and one ledger record per removal, which names the
// content it held. It is a denial, not a deletion: the file was never
// part of the tree, and nothing that restores deleted files (revert, the
// git gate's known versions) may bring it back.
func (d *Daemon) Discarded(req policy.Request, dec policy.Decision, preHash, preImage string, p *ledger.Process, sess *ledger.Session) {
	now := time.Now()
	d.showDenial(req, dec, p, sess, now)
	d.log.Warn("removed a provisional file", "path", dec.Path, "intent", req.Intent, "hash", preHash)
	d.writer.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventDenied, Path: dec.Path, Intent: req.Intent,
		Validation: string(dec.Validation), Op: "discard", Code: string(dec.Code), Reason: dec.Reason, PreHash: preHash, PreImage: preImage,
		Process: p, Session: sess, Time: now}, d.cfg.Version))
}

// Denied records a refused change: ledger, recent-denials ring and log.
func (d *Daemon) Denied(req policy.Request, dec policy.Decision, p *ledger.Process, sess *ledger.Session) {
	now := time.Now()
	dn := d.showDenial(req, dec, p, sess, now)
	// Repeats of a denial are counted, not recorded one by one (see
	// denialthrottle.go): a refused loop must not fill the disk.
	if !d.throttle.admit(kindOf(string(req.Op), string(dec.Code), req.Intent, dn.Path, dec.Reason, p, sess), p, sess, now) {
		return
	}
	comm := ""
	if p != nil {
		comm = p.Comm
	}
	d.log.Warn("denied", "op", req.Op, "path", dn.Path, "intent", req.Intent, "code", dec.Code, "pid", req.Caller.Pid, "comm", comm, "reason", dec.Reason)
	// The record names the refused path. When that is where a rename or
	// link was going, from_path says where it came from, as a rename or
	// link record would; the reason names both ends either way.
	recPath, from := dn.Path, ""
	if (req.Op == policy.OpRename && dn.Path == req.Path2) || (req.Op == policy.OpLink && dn.Path == req.Path) {
		from = dn.Path2
	}
	d.writer.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventDenied, Path: recPath, FromPath: from, Intent: req.Intent,
		Validation: string(dec.Validation), Op: string(req.Op), Code: string(dec.Code), Reason: dec.Reason,
		Process: p, Session: sess, Time: now}, d.cfg.Version))
	d.lessonOnDenial(req, dec)
}

// showDenial counts a refusal and puts it where refusals are shown: the
// recent-denials ring (.intentfs/denials, the hooks, the MCP server) and
// the feed.
func (d *Daemon) showDenial(req policy.Request, dec policy.Decision, p *ledger.Process, sess *ledger.Session, now time.Time) control.Denial {
	d.counters.denied.Add(1)
	sessID := ""
	if sess != nil {
		sessID = sess.ID
		if s := d.sessions.Get(sess.ID); s != nil {
			s.CountDenial()
		}
	}
	path := dec.Path
	if path == "" {
		path = req.Path
	}
	// For a rename or link, the denial names the path that was refused;
	// the other end of the operation is kept too, so a refused
	// `mv src/a docs/` still says where the file came from.
	other := req.Path2
	if path == req.Path2 && req.Path2 != "" {
		other = req.Path
	}
	dn := control.Denial{Time: now, Op: string(req.Op), Path: path, Path2: other, Intent: req.Intent,
		Session: sessID, Code: string(dec.Code), Reason: dec.Reason, Process: p}
	d.denials.add(dn)
	if d.ctlDir != nil {
		d.ctlDir.Changed("denials", "status")
	}
	if d.feed.Active() {
		d.publishDenial(dn)
	}
	return dn
}

// summarizeDenialsEvery records the counts of repeated denials at the end
// of each window.
func (d *Daemon) summarizeDenialsEvery(ctx context.Context) {
	t := time.NewTicker(denialWindow / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d.recordDenialSummaries(now, false)
		}
	}
}

// recordDenialSummaries appends the window's summaries (all of them if
// force, at close).
func (d *Daemon) recordDenialSummaries(now time.Time, force bool) {
	for _, c := range d.throttle.due(now, force) {
		d.log.Warn("denied repeatedly", "op", c.Op, "dir", c.Path, "code", c.Code, "repeats", c.Repeats)
		d.writer.Append(ledger.NewRecord(c, d.cfg.Version))
	}
}

// Select makes id the active intent, "" for none: for by's session when
// by is a session's process, else for the mount. An unknown id, or an
// intent that is BLOCKED, COMPLETE or ARCHIVED, is refused; so is any
// select by a process that cannot be placed.
func (d *Daemon) Select(id string, by *ledger.Process) error {
	s, err := d.sessionOf(by)
	if err != nil {
		return fmt.Errorf("%v: %w", err, syscall.EPERM)
	}
	if s != nil {
		return d.selectInSession(s, id, by)
	}
	if id != "" {
		if _, err := d.selectable(id, by); err != nil {
			return err
		}
	}
	d.selMu.Lock()
	prev := d.ActiveIntent()
	if id == prev {
		// Nothing changes, so nothing is recorded: repeating a select
		// costs the ledger nothing.
		d.selMu.Unlock()
		return nil
	}
	if by != nil && !d.selects.allow(by.Uid, time.Now()) {
		d.selMu.Unlock()
		return d.selectRefused(prev, by, nil)
	}
	d.active.Store(&id)
	d.selMu.Unlock()
	c := ledger.Change{Event: ledger.EventSelect, Intent: id, FromIntent: prev, Process: by}
	if held := (control.Status{OpenWriters: d.openWriters()}).HeldBy(id); len(held) > 0 {
		// Handles keep the intent they were opened under; say so where the
		// selection is recorded.
		c.Reason = heldWritersReason(held)
		d.log.Warn("files stay open for writing under other intents", "intent", id, "count", len(held))
	}
	d.log.Info("intent selected", "intent", id, "previous", prev, "by_pid", by.Pid, "by", by.Comm)
	d.Record(c)
	return nil
}

// selectRefused counts a select over the uid's allowance (see
// selectlimit.go) as a denial and returns an error that is EBUSY, which
// the control file returns to the writer.
func (d *Daemon) selectRefused(active string, by *ledger.Process, sess *ledger.Session) error {
	reason := fmt.Sprintf("too many intent selections by uid %d: at most %d at once, then %d a second", by.Uid, selectBurst, selectsPerSecond)
	d.Denied(policy.Request{Op: "select", Path: fsnode.ControlDirName + "/active", Intent: active,
		Caller: policy.Caller{Pid: by.Pid, Uid: by.Uid, Gid: by.Gid}},
		policy.Decision{Code: "SELECT_RATE_LIMITED", Reason: reason, Validation: policy.ValidationFail}, by, sess)
	return fmt.Errorf("%s; the intent stays %s, try again in a moment: %w", reason, activeName(active), syscall.EBUSY)
}

// activeName names the active intent in a message.
func activeName(id string) string {
	if id == "" {
		return "none"
	}
	return id
}

func intentIDs(s *policy.Snapshot) string {
	var ids []string
	for _, in := range s.Intents.List {
		ids = append(ids, in.ID)
	}
	if len(ids) == 0 {
		return "none (the policy file lists no intents)"
	}
	return strings.Join(ids, ", ")
}

// InvalidControlWrite records garbage written to a control file.
func (d *Daemon) InvalidControlWrite(file string, data []byte, err error, by *ledger.Process) {
	shown := strings.ToValidUTF8(string(data), "?")
	if len(shown) > 64 {
		shown = shown[:64] + "..."
	}
	reason := fmt.Sprintf("invalid write to .intentfs/%s (%q): %v", file, strings.TrimSpace(shown), err)
	var sess *ledger.Session
	if s, err := d.sessionOf(by); err == nil && s != nil {
		sess = s.Ref()
	}
	d.Denied(policy.Request{Op: "control_write", Path: fsnode.ControlDirName + "/" + file, Intent: d.intentFor(by),
		Caller: policy.Caller{Pid: by.Pid, Uid: by.Uid, Gid: by.Gid}},
		policy.Decision{Code: "INVALID_CONTROL_WRITE", Reason: reason, Validation: policy.ValidationFail}, by, sess)
}

// Denials returns the recent denials, oldest first: a session's own for
// a process of that session, else all of them.
func (d *Daemon) Denials(by *ledger.Process) []control.Denial {
	all := d.denials.list()
	s, err := d.sessionOf(by)
	if err != nil || s == nil {
		return all
	}
	own := all[:0]
	for _, dn := range all {
		if dn.Session == s.ID() {
			own = append(own, dn)
		}
	}
	return own
}

// Status describes the mount.
func (d *Daemon) Status() control.Status {
	st := control.Status{
		Mountpoint: d.cfg.Mountpoint, Source: d.cfg.Source, Pid: os.Getpid(), Version: d.cfg.Version,
		StartedAt: d.started, ActiveIntent: d.ActiveIntent(), FailOpen: d.cfg.FailOpen,
		LedgerPath: d.LedgerPath(), Ledger: d.writer.Stats(),
		Policy: d.engine.State(), RecentDenials: d.denials.list(), OpenWriters: d.openWriters(), Waiting: len(d.approvals.List()),
		SourceWatched: d.cacheTimeout == longCache, CacheSeconds: d.cacheTimeout.Seconds(),
	}
	if m := d.mounted.Load(); m != nil {
		st.Transport, st.Passthrough = m.transport, m.passthrough
	}
	st.Upstream = upstreamStatusToWire(d.mirrorNow().Status())
	st.Signing = d.signingStatus()
	if in := d.engine.Snapshot().Intents.Get(st.ActiveIntent); in != nil {
		st.IntentName, st.IntentStatus = in.Name, string(in.Status)
	}
	st.Counters = control.Counters{Allowed: d.counters.allowed.Load(), Denied: d.counters.denied.Load(),
		Recorded: d.counters.recorded.Load(), WouldDeny: d.counters.wouldDeny.Load(), WouldHold: d.counters.wouldHold.Load()}
	snap := d.engine.Snapshot()
	st.Enforcement = string(snap.EnforcementFor(st.ActiveIntent))
	st.WorkspaceEnforcement = string(snap.EnforcementFor(""))
	if snap != nil && snap.Intents != nil {
		for _, in := range snap.Intents.List {
			if len(st.IntentEnforcement) == control.MaxIntentEnforcement {
				break
			}
			st.IntentEnforcement = append(st.IntentEnforcement, control.IntentEnforcement{ID: in.ID, Status: string(in.Status), Enforcement: string(snap.EnforcementFor(in.ID))})
		}
	}
	if d.root != nil {
		st.Counters.BytesHashed = d.root.Hashes().BytesHashed()
		st.Counters.HashCacheHits = d.root.Hashes().Hits()
	}
	if d.ops != nil {
		st.Ops = d.ops.Counts()
	}
	if len(st.RecentDenials) > 10 {
		st.RecentDenials = st.RecentDenials[len(st.RecentDenials)-10:]
	}
	sessions := d.sessions.List()
	st.Sessions = sessionsToWire(sessions)
	st.FilePermissions = d.scopePermissions(sessions)
	if d.store != nil {
		st.Store = storeUsageToWire(d.store.Usage())
	}
	if d.exporter != nil {
		s := exportStatsToWire(d.exporter.Stats())
		st.Export = &s
	}
	return st
}

// denialRing keeps the most recent denials.
type denialRing struct {
	mu   sync.Mutex
	size int
	buf  []control.Denial
}

// saveWindow is how close together the refusals of one process in one
// directory must come to be one line: a tool's save tries several
// temporaries (vim's swap file names, a retry) within it.
const saveWindow = time.Second

// saveLookback bounds how far back add looks for the line a refusal
// belongs to.
const saveLookback = 8

// add keeps dn, or counts it on the line of the same process's refusal of
// the same operation in the same directory less than saveWindow before.
func (r *denialRing) add(dn control.Denial) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.buf) - 1; i >= 0 && i >= len(r.buf)-saveLookback; i-- {
		if sameSave(&r.buf[i], &dn) {
			r.buf[i].Repeats++
			return
		}
	}
	r.buf = append(r.buf, dn)
	if len(r.buf) > r.size {
		r.buf = slices.Delete(r.buf, 0, len(r.buf)-r.size)
	}
}

// sameSave reports whether dn repeats first: the same process refused the
// same operation, with the same code, in the same directory, within
// saveWindow of first.
func sameSave(first, dn *control.Denial) bool {
	if first.Process == nil || dn.Process == nil || first.Process.Pid != dn.Process.Pid {
		return false
	}
	d := dn.Time.Sub(first.Time)
	return d >= 0 && d < saveWindow && first.Op == dn.Op && first.Code == dn.Code && first.Session == dn.Session &&
		first.Intent == dn.Intent && path.Dir(first.Path) == path.Dir(dn.Path)
}

func (r *denialRing) list() []control.Denial {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.buf)
}

// openWriters lists the files open for writing through the mount.
func (d *Daemon) openWriters() []control.OpenWriter {
	if d.root == nil {
		return nil
	}
	var out []control.OpenWriter
	for _, w := range d.root.OpenWriters() {
		out = append(out, control.OpenWriter{Path: w.Path, Intent: w.Intent, Pid: w.Pid})
	}
	return out
}

// maxHeldListed bounds the paths a select record names.
const maxHeldListed = 10

func heldWritersReason(held []control.OpenWriter) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d file(s) stay open for writing under other intents; their changes are recorded under those until closed:", len(held))
	for i, w := range held {
		if i == maxHeldListed {
			fmt.Fprintf(&b, " and %d more", len(held)-i)
			break
		}
		fmt.Fprintf(&b, " %s (%s, pid %d)", textsafe.Escape(w.Path), w.Intent, w.Pid)
	}
	return b.String()
}
