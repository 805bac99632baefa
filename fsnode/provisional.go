package fsnode

import (
	"fmt"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// A provisional file is a new file that the scope alone would refuse,
// made beside a name the intent owns (see policy.Snapshot.Provisional):
// the temporary of an atomic save. Writing it needs no decision; renaming
// it onto a name is decided as a write of that name, and is its only way
// to stay. One that is not renamed into the scope is removed by the daemon
// once its last handle has been closed for ProvisionalIdle, after
// ProvisionalMaxLife even if handles are open, and at unmount; the removal
// is recorded. So no file outside the scope survives, and the scope
// decides what every name it owns receives.

// Defaults of the provisional window (see Options).
const (
	DefaultProvisionalIdle     = 5 * time.Second
	DefaultProvisionalMaxLife  = 10 * time.Minute
	DefaultProvisionalPerActor = 64
)

// CodeProvisionalRemoved is the code of the denial that records the
// removal of a provisional file (op "discard", pre_hash what it held).
const CodeProvisionalRemoved = "PROVISIONAL_REMOVED"

// provisionalFile is one provisional file of the source.
type provisionalFile struct {
	rel      string
	dev, ino uint64
	// node is the file's node, whose open handles keep it; nil when the
	// kernel knew none.
	node    *Node
	owner   string
	g       grant
	created time.Time
	// idleSince is when the daemon first saw no handle open on it; zero
	// while one is.
	idleSince time.Time
}

// provisionalTable holds the provisional files of one mount, by path.
type provisionalTable struct {
	mu       sync.Mutex
	byRel    map[string]*provisionalFile
	perOwner map[string]int
	// maxPerOwner bounds the provisional files of one session (or, outside
	// sessions, one uid); idle and maxLife are the window.
	maxPerOwner   int
	idle, maxLife time.Duration
	// stop ends the sweeper, started with the first provisional file;
	// sweeping counts it until it has returned.
	stop     chan struct{}
	running  bool
	sweeping sync.WaitGroup
}

func newProvisionalTable(idle, maxLife time.Duration, perOwner int) *provisionalTable {
	if idle <= 0 {
		idle = DefaultProvisionalIdle
	}
	if maxLife <= 0 {
		maxLife = DefaultProvisionalMaxLife
	}
	if perOwner <= 0 {
		perOwner = DefaultProvisionalPerActor
	}
	return &provisionalTable{byRel: map[string]*provisionalFile{}, perOwner: map[string]int{},
		maxPerOwner: perOwner, idle: idle, maxLife: maxLife, stop: make(chan struct{})}
}

// ownerOf is whose share a provisional file counts in: its session's, or
// outside sessions its uid's.
func ownerOf(a Actor, c policy.Caller) string {
	if a.Session != nil {
		return "session " + a.Session.ID
	}
	return fmt.Sprintf("uid %d", c.Uid)
}

// hasRoom reports whether owner may make one more provisional file.
func (t *provisionalTable) hasRoom(owner string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.perOwner[owner] < t.maxPerOwner
}

// holds reports whether rel is a provisional file and dev, ino its
// identity.
func (t *provisionalTable) holds(rel string, dev, ino uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.byRel[rel]
	return ok && p.dev == dev && p.ino == ino
}

// holdsStat is holds for the stat of a regular file with one name: a file
// with other names is never provisional, or writing it would change them.
func (t *provisionalTable) holdsStat(rel string, st *syscall.Stat_t) bool {
	return st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Nlink == 1 && t.holds(rel, uint64(st.Dev), st.Ino)
}

// add makes the file at rel, of stat st, provisional. The share was
// checked when the creation was decided; concurrent creations may pass it
// by the number of requests in flight, which the kernel bounds.
func (t *provisionalTable) add(p *provisionalFile, st *syscall.Stat_t) (start bool) {
	p.dev, p.ino = uint64(st.Dev), st.Ino
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.byRel[p.rel]; ok {
		t.perOwner[old.owner]--
	}
	t.byRel[p.rel] = p
	t.perOwner[p.owner]++
	start = !t.running
	if start {
		t.sweeping.Add(1)
	}
	t.running = true
	return start
}

// drop forgets rel, which stopped being provisional (renamed into the
// scope, or unlinked), if it is the file of dev and ino.
func (t *provisionalTable) drop(rel string, dev, ino uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.byRel[rel]; ok && p.dev == dev && p.ino == ino {
		t.dropLocked(p)
	}
}

// adopt forgets rel, if it is a provisional file: an allowed change under
// a scope that covers it governs it now.
func (t *provisionalTable) adopt(rel string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.byRel[rel]; ok {
		t.dropLocked(p)
	}
}

func (t *provisionalTable) dropLocked(p *provisionalFile) {
	delete(t.byRel, p.rel)
	if t.perOwner[p.owner]--; t.perOwner[p.owner] <= 0 {
		delete(t.perOwner, p.owner)
	}
}

// due returns the provisional files whose window has ended at now, and
// forgets them: idle for t.idle with no handle open, or older than
// t.maxLife whatever is open; all of them if all.
func (t *provisionalTable) due(now time.Time, all bool) []*provisionalFile {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*provisionalFile
	for _, p := range t.byRel {
		open := p.node != nil && p.node.handles.Load() > 0
		switch {
		case open:
			p.idleSince = time.Time{}
		case p.idleSince.IsZero():
			p.idleSince = now
		}
		if all || now.Sub(p.created) >= t.maxLife || (!open && now.Sub(p.idleSince) >= t.idle) {
			out = append(out, p)
		}
	}
	for _, p := range out {
		t.dropLocked(p)
	}
	return out
}

// ofOwner returns owner's provisional files and forgets them.
func (t *provisionalTable) ofOwner(owner string) []*provisionalFile {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*provisionalFile
	for _, p := range t.byRel {
		if p.owner == owner {
			out = append(out, p)
		}
	}
	for _, p := range out {
		t.dropLocked(p)
	}
	return out
}

// SessionEnded removes the provisional files of the agent session id,
// whose processes are gone: no save of theirs is in flight.
func (r *Root) SessionEnded(id string) {
	if r.closed.Load() {
		return
	}
	for _, p := range r.prov.ofOwner(ownerOf(Actor{Session: &ledger.Session{ID: id}}, policy.Caller{})) {
		r.removeProvisional(p, "its session ended")
	}
}

// sweepProvisional removes the provisional files whose window has ended,
// until the mount closes.
func (r *Root) sweepProvisional() {
	defer r.prov.sweeping.Done()
	tick := time.NewTicker(min(r.prov.idle/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-r.prov.stop:
			return
		case now := <-tick.C:
			for _, p := range r.prov.due(now, false) {
				r.removeProvisional(p, "its window ended")
			}
		}
	}
}

// closeProvisional stops the sweeper and removes every provisional file
// left: the mount is going away.
func (r *Root) closeProvisional() {
	r.prov.mu.Lock()
	select {
	case <-r.prov.stop:
	default:
		close(r.prov.stop)
	}
	r.prov.mu.Unlock()
	// The sweeper must be done with the source's descriptor before the
	// mount closes it.
	r.prov.sweeping.Wait()
	for _, p := range r.prov.due(time.Now(), true) {
		r.removeProvisional(p, "the mount closed")
	}
}

// removeProvisional removes p from the source, as the daemon, if the file
// at its path is still the provisional one, and records what it held.
func (r *Root) removeProvisional(p *provisionalFile, why string) {
	dir, name := splitRel(p.rel)
	dirfd, err := r.openDir(dir)
	if err != nil {
		if err != syscall.ENOENT {
			r.log.Warn("removing a provisional file: its directory cannot be opened", "path", p.rel, "err", err)
		}
		return
	}
	defer syscall.Close(dirfd)
	var st syscall.Stat_t
	if err := fstatat(dirfd, name, &st); err != nil || uint64(st.Dev) != p.dev || st.Ino != p.ino {
		return // gone already, or no longer the provisional file
	}
	// Its bytes are kept, as any version a change destroys: what was
	// smuggled can be read back.
	d, kept := r.preImageBeforeRemoval(dirfd, name)
	if err := unix.Unlinkat(dirfd, name, 0); err != nil {
		r.log.Error("removing a provisional file failed", "path", p.rel, "err", err)
		return
	}
	r.forgetEntry(dir, name)
	session := "no session"
	if p.g.actor.Session != nil {
		session = "session " + p.g.actor.Session.ID
	}
	var caller policy.Caller
	if p.g.proc != nil {
		caller = policy.Caller{Pid: p.g.proc.Pid, Uid: p.g.proc.Uid}
	}
	// A denial, not a deletion: the file was never part of the tree, and
	// nothing that restores deleted files may bring it back. The agent
	// saw its creation succeed, so it is shown where refusals are.
	rel := textsafe.Escape(p.rel)
	r.gov.Discarded(policy.Request{Op: policy.OpCreate, Path: p.rel, Intent: p.g.intent, Caller: caller},
		policy.Decision{Code: CodeProvisionalRemoved, Validation: policy.ValidationFail, Path: p.rel,
			Reason: fmt.Sprintf("%s is outside the scope: a temporary file made beside a name the intent owns at %s (%s), never renamed onto a name of the scope, removed by intentfs because %s; it held %s. %s",
				rel, p.created.UTC().Format(time.RFC3339), session, why, d.Hash, p.g.decision.Reason)},
		d.Hash, kept, p.g.proc, p.g.actor.Session)
}
