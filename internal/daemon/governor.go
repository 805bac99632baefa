package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/internal/feed"
	"github.com/intentfs/intentfs/internal/gitgate"
	"github.com/intentfs/intentfs/internal/procinfo"
	"github.com/intentfs/intentfs/internal/sidecar"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// governor is the filesystem's governor (fsnode.Governor): before a
// change it answers what a request asks (the policy in force, who the
// caller is, whether an approval rule holds the change), and after it
// records and shows every change and refusal the filesystem reports:
// the ledger, the recent-denials ring, the intent map, the lessons, the
// feed and the counters. It decides nothing itself: policy.Snapshot.Decide
// does, in fsnode.
type governor struct {
	version string
	log     *slog.Logger
	engine  *policy.Engine
	procs   *procinfo.Cache
	// actors places the callers of requests.
	actors *actors
	// writer is the ledger's; set once the source is opened, before any
	// change can be recorded.
	writer *ledger.Writer
	// git, when set, indexes every record for the commit gate and says
	// when git restored content it already knew.
	git *gitgate.Gate
	// approvals holds changes for a human; feed shows events to watchers.
	approvals *approvals.Queue
	feed      *feed.Hub
	denials   denialRing
	throttle  *denialThrottle
	// ctlDir is the mount's .intentfs/ directory, whose files the kernel
	// is told of when their content changes; nil before the mount.
	ctlDir     *control.Dir
	imap       *sidecar.IntentMap
	lessons    *sidecar.Lessons
	lessonMu   sync.Mutex
	deniedDirs map[string]bool
	declared   atomic.Pointer[ledger.MutationClass]
	// counters are the mount's running totals; wouldDeny counts the
	// changes observe mode let through that the policy refuses,
	// wouldHold those an approval rule would have held.
	counters struct {
		allowed, denied, recorded, wouldDeny, wouldHold atomic.Uint64
	}
}

var _ fsnode.Governor = (*governor)(nil)

// newGovernor returns the governor of a mount whose ledger is not open
// yet: the caller sets writer (and git, ctlDir) before the first change.
func newGovernor(version string, log *slog.Logger, engine *policy.Engine, procs *procinfo.Cache, imap *sidecar.IntentMap) *governor {
	g := &governor{version: version, log: log, engine: engine, procs: procs, imap: imap, feed: &feed.Hub{},
		throttle: newDenialThrottle(), deniedDirs: map[string]bool{}}
	g.denials.size = 100
	g.approvals = g.newApprovalQueue()
	return g
}

// ActorOf places the process behind a request (see actors.of).
func (g *governor) ActorOf(c *fuse.Caller) fsnode.Actor { return g.actors.of(c) }

// DeclaredClass returns the mutation class the agent declared.
func (g *governor) DeclaredClass() ledger.MutationClass {
	if p := g.declared.Load(); p != nil {
		return *p
	}
	return ""
}

// LedgerErr says why the ledger cannot commit (nil while it can).
func (g *governor) LedgerErr() error { return g.writer.Err() }

// Snapshot returns the policy in force.
func (g *governor) Snapshot() *policy.Snapshot { return g.engine.Snapshot() }

// Process describes the caller of a request.
func (g *governor) Process(c *fuse.Caller) *ledger.Process {
	if c == nil {
		return &ledger.Process{}
	}
	return g.procs.Lookup(c.Pid, c.Uid, c.Gid)
}

// Record appends a change to the ledger.
func (g *governor) Record(c ledger.Change) {
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	g.counters.recorded.Add(1)
	if ledger.ClassOf(c.Event) != "" {
		g.counters.allowed.Add(1)
		if c.Validation == string(policy.ValidationFail) {
			g.counters.wouldDeny.Add(1)
		}
		g.mapChange(c)
		if c.Session != nil {
			if s := g.actors.sessions.Get(c.Session.ID); s != nil {
				s.CountChange()
			}
		}
	}
	if g.git != nil && c.PostHash != "" && c.RestoredFrom == "" && c.Event != ledger.EventAccept {
		// Content git wrote that already existed is not authorship.
		c.RestoredFrom = g.git.Restored(context.Background(), c.Path, c.PostHash, c.Process)
	}
	if g.git != nil {
		// The gate indexes the record as written: after the writer's
		// goroutine has completed it (a removal's pre_hash is computed
		// there), in that goroutine, so nothing reads it while it changes.
		git, finish := g.git, c.Finish
		c.Finish = func(r *ledger.Record) {
			if finish != nil {
				finish(r)
			}
			git.Add(r)
		}
	}
	g.writer.Append(ledger.NewRecord(c, g.version))
	if g.feed.Active() {
		g.publishRecord(c)
	}
}

// Discarded records the removal of a provisional file the scope refused:
// shown as a refusal, and one ledger record per removal, which names the
// content it held. It is a denial, not a deletion: the file was never
// part of the tree, and nothing that restores deleted files (revert, the
// git gate's known versions) may bring it back.
func (g *governor) Discarded(req policy.Request, dec policy.Decision, preHash, preImage string, p *ledger.Process, sess *ledger.Session) {
	now := time.Now()
	g.showDenial(req, dec, p, sess, now)
	g.log.Warn("removed a provisional file", "path", dec.Path, "intent", req.Intent, "hash", preHash)
	g.writer.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventDenied, Path: dec.Path, Intent: req.Intent,
		Validation: string(dec.Validation), Op: "discard", Code: string(dec.Code), Reason: dec.Reason, PreHash: preHash, PreImage: preImage,
		Process: p, Session: sess, Time: now}, g.version))
}

// Denied records a refused change: ledger, recent-denials ring and log.
func (g *governor) Denied(req policy.Request, dec policy.Decision, p *ledger.Process, sess *ledger.Session) {
	now := time.Now()
	dn := g.showDenial(req, dec, p, sess, now)
	// Repeats of a denial are counted, not recorded one by one (see
	// denialthrottle.go): a refused loop must not fill the disk.
	if !g.throttle.admit(kindOf(string(req.Op), string(dec.Code), req.Intent, dn.Path, dec.Reason, p, sess), p, sess, now) {
		return
	}
	comm := ""
	if p != nil {
		comm = p.Comm
	}
	g.log.Warn("denied", "op", req.Op, "path", dn.Path, "intent", req.Intent, "code", dec.Code, "pid", req.Caller.Pid, "comm", comm, "reason", dec.Reason)
	// The record names the refused path. When that is where a rename or
	// link was going, from_path says where it came from, as a rename or
	// link record would; the reason names both ends either way.
	recPath, from := dn.Path, ""
	if (req.Op == policy.OpRename && dn.Path == req.Path2) || (req.Op == policy.OpLink && dn.Path == req.Path) {
		from = dn.Path2
	}
	g.writer.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventDenied, Path: recPath, FromPath: from, Intent: req.Intent,
		Validation: string(dec.Validation), Op: string(req.Op), Code: string(dec.Code), Reason: dec.Reason,
		Process: p, Session: sess, Time: now}, g.version))
	g.lessonOnDenial(req, dec)
}

// showDenial counts a refusal and puts it where refusals are shown: the
// recent-denials ring (.intentfs/denials, the hooks, the MCP server) and
// the feed.
func (g *governor) showDenial(req policy.Request, dec policy.Decision, p *ledger.Process, sess *ledger.Session, now time.Time) control.Denial {
	g.counters.denied.Add(1)
	sessID := ""
	if sess != nil {
		sessID = sess.ID
		if s := g.actors.sessions.Get(sess.ID); s != nil {
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
	g.denials.add(dn)
	if g.ctlDir != nil {
		g.ctlDir.Changed("denials", "status")
	}
	if g.feed.Active() {
		g.publishDenial(dn)
	}
	return dn
}

// summarizeDenialsEvery records the counts of repeated denials at the end
// of each window.
func (g *governor) summarizeDenialsEvery(ctx context.Context) {
	t := time.NewTicker(denialWindow / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			g.recordDenialSummaries(now, false)
		}
	}
}

// recordDenialSummaries appends the window's summaries (all of them if
// force, at close).
func (g *governor) recordDenialSummaries(now time.Time, force bool) {
	for _, c := range g.throttle.due(now, force) {
		g.log.Warn("denied repeatedly", "op", c.Op, "dir", c.Path, "code", c.Code, "repeats", c.Repeats)
		g.writer.Append(ledger.NewRecord(c, g.version))
	}
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

// mapChange keeps intent_map.md in step with a recorded change.
func (g *governor) mapChange(c ledger.Change) {
	if c.Intent == "" || c.Validation != string(policy.ValidationPass) {
		return
	}
	name := ""
	if in := g.engine.Snapshot().Intents.Get(c.Intent); in != nil {
		name = in.Name
	}
	switch c.Event {
	case ledger.EventCreate, ledger.EventSymlink, ledger.EventLink, ledger.EventMknod:
		g.imap.Touch(c.Intent, name, c.Path, false, c.Time)
	case ledger.EventWrite, ledger.EventTruncate:
		g.imap.Touch(c.Intent, name, c.Path, true, c.Time)
	case ledger.EventRename:
		if c.PostHash != "" {
			// A content hash is taken of a regular file only: nothing
			// is listed below it.
			g.imap.MoveFile(c.FromPath, c.Path)
		} else {
			g.imap.Move(c.FromPath, c.Path)
		}
		g.imap.Touch(c.Intent, name, c.Path, c.PreHash != "", c.Time)
	case ledger.EventDelete, ledger.EventRmdir:
		g.imap.Remove(c.Path)
	}
}

// maxDeniedDirs bounds the directories remembered for lessons.
const maxDeniedDirs = 4096

// lessonOnDenial records a lesson the first time an intent is denied a
// path outside its scope. Denials are grouped by directory, so a denied
// `tar -x` of a thousand files teaches one lesson, not a thousand.
func (g *governor) lessonOnDenial(req policy.Request, dec policy.Decision) {
	if dec.Code != policy.CodeOutOfScope || req.Intent == "" {
		return
	}
	where := path.Dir(dec.Path)
	key := req.Intent + "\x00" + where
	g.lessonMu.Lock()
	if len(g.deniedDirs) >= maxDeniedDirs {
		// Bounded: forgetting only risks a lesson the file already has,
		// which Lessons.Add does not write twice.
		clear(g.deniedDirs)
	}
	seen := g.deniedDirs[key]
	g.deniedDirs[key] = true
	g.lessonMu.Unlock()
	if seen {
		return
	}
	target := "`" + dec.Path + "`"
	if where != "." {
		target += " (in `" + where + "/`)"
	}
	scope := ""
	if in := g.engine.Snapshot().Intents.Get(req.Intent); in != nil {
		scope = strings.Join(in.OwnedScope, ", ")
	}
	text := fmt.Sprintf("Changing %s is outside this intent's owned_scope (%s): %s was denied. Stay in scope, or ask for the scope to be widened or for another intent.", target, scope, req.Op)
	if _, err := g.lessons.Add(req.Intent, text, time.Now()); err != nil {
		g.log.Error("recording a lesson failed", "err", err)
	}
}
