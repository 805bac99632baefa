package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
)

// MaxLive bounds the sessions of one mount.
const MaxLive = 64

// maxRecent bounds the ended sessions that are still listed.
const maxRecent = 32

// ErrClaimed is returned when an intent is held by another session.
var ErrClaimed = errors.New("intent held by another session")

// Sessions holds the sessions of one mount.
type Sessions struct {
	placer *placer
	// ending is told when a session ends, once, while it is still live
	// (its changes are still counted for it) but its processes are no
	// longer placed in it: what it changed and has not yet recorded is
	// recorded then, before onEnd records the end.
	ending func(*Session)
	// onEnd is told when a session has ended (its root process exited, or
	// it was ended), once, in a goroutine of its own.
	onEnd func(*Session)

	mu     sync.Mutex
	live   map[string]*Session
	byNS   map[uint64]*Session
	claims map[string]*Session // intent id → holder
	recent []Info
	closed bool

	// stop ends the watchers when the set of sessions closes.
	stop   chan struct{}
	stopFd int // an eventfd the watchers poll with their pidfds
	wg     sync.WaitGroup
}

// NewSessions returns an empty set of sessions. ending (nil for none) and
// then onEnd are called once per session when it ends.
func NewSessions(ending, onEnd func(*Session)) (*Sessions, error) {
	p, err := newPlacer("/proc")
	if err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("creating the session watcher's eventfd: %w", err)
	}
	return &Sessions{placer: p, ending: ending, onEnd: onEnd, live: map[string]*Session{}, byNS: map[uint64]*Session{},
		claims: map[string]*Session{}, stop: make(chan struct{}), stopFd: efd}, nil
}

// Place returns the session the process pid belongs to, nil for none.
// A process that cannot be placed (it is gone, or lives in a pid
// namespace the daemon cannot see) yields an error wrapping ErrUnplaced;
// so does a process of a session that has ended.
func (r *Sessions) Place(pid uint32) (*Session, error) {
	if pid == 0 {
		// FUSE reports 0 for a process outside the daemon's pid
		// namespace; sessions are made inside it, so this is none.
		return nil, nil
	}
	r.mu.Lock()
	none := len(r.byNS) == 0
	r.mu.Unlock()
	if none {
		// No session lives, so no process can be in one: a session's
		// processes start only after it is registered.
		return nil, nil
	}
	s, err := r.placer.place(pid, r.sessionByNS)
	if err != nil {
		return nil, err
	}
	if s != nil && s.Ended() {
		return nil, fmt.Errorf("%w: pid %d belongs to session %s, which has ended", ErrUnplaced, pid, s.id)
	}
	return s, nil
}

func (r *Sessions) sessionByNS(ino uint64) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byNS[ino]
}

// Start registers a session whose root process is spec.RootPid. The
// process must be the init of a pid namespace of its own, one level below
// the daemon's: that namespace is the session.
func (r *Sessions) Start(spec Spec) (*Session, error) {
	if spec.RootPid <= 0 {
		return nil, fmt.Errorf("a session needs its root process's pid")
	}
	pidfd, err := openPidfd(uint32(spec.RootPid))
	if err != nil {
		return nil, fmt.Errorf("opening session root pid %d: %w", spec.RootPid, err)
	}
	nsFd, ino, err := r.rootNamespace(spec.RootPid)
	if err == nil && !alive(pidfd) {
		unix.Close(nsFd)
		err = fmt.Errorf("pid %d exited before its session was registered", spec.RootPid)
	}
	if err != nil {
		unix.Close(pidfd)
		return nil, err
	}
	id := uuid.NewString()[:8]
	s := &Session{id: id, spec: spec, started: time.Now(), nsIno: ino, nsFd: nsFd, pidfd: pidfd, versions: newVersions(),
		ref: &ledger.Session{ID: id, Name: spec.Name, User: spec.User, Model: spec.Model, Conversation: spec.Conversation}}
	intent := spec.Intent
	s.intent.Store(&intent)

	r.mu.Lock()
	defer r.mu.Unlock()
	fail := func(err error) (*Session, error) {
		unix.Close(nsFd)
		unix.Close(pidfd)
		return nil, err
	}
	switch {
	case r.closed:
		return fail(errors.New("the mount is shutting down"))
	case len(r.live) >= MaxLive:
		return fail(fmt.Errorf("the mount already runs %d sessions, the most it allows", MaxLive))
	case r.byNS[ino] != nil:
		return fail(fmt.Errorf("pid %d's namespace is already session %s", spec.RootPid, r.byNS[ino].id))
	}
	r.live[id] = s
	r.byNS[ino] = s
	r.wg.Add(1)
	go r.watch(s)
	return s, nil
}

// rootNamespace opens the pid namespace of pid and checks that pid is its
// init and that its parent is the daemon's namespace: a session is a
// fresh namespace made for it, never the daemon's own or a container's.
func (r *Sessions) rootNamespace(pid int) (int, uint64, error) {
	fd, err := unix.Open(fmt.Sprintf("%s/%d/ns/pid", r.placer.procRoot, pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("opening pid %d's pid namespace: %w", pid, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	if st.Ino == r.placer.selfNS {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("pid %d runs in the daemon's own pid namespace; a session needs one of its own", pid)
	}
	parent, err := unix.IoctlRetInt(fd, nsGetParent)
	if err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("finding the parent of pid %d's pid namespace: %w", pid, err)
	}
	var pst unix.Stat_t
	err = unix.Fstat(parent, &pst)
	unix.Close(parent)
	if err != nil || pst.Ino != r.placer.selfNS {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("pid %d's pid namespace is not a child of the daemon's", pid)
	}
	if nspid, err := nsPid(r.placer.procRoot, pid); err != nil || nspid != 1 {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("pid %d is not the first process of its pid namespace", pid)
	}
	return fd, st.Ino, nil
}

// watch waits for the session's root process to exit, then ends the
// session.
func (r *Sessions) watch(s *Session) {
	defer r.wg.Done()
	fds := []unix.PollFd{{Fd: int32(s.pidfd), Events: unix.POLLIN}, {Fd: int32(r.stopFd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		break
	}
	r.end(s)
}

// end marks s ended, releases its claim, lists it among the recent and
// tells onEnd. It runs once per session.
func (r *Sessions) end(s *Session) {
	if s.abandoned.Load() {
		unix.Close(s.nsFd)
		unix.Close(s.pidfd)
		return
	}
	if s.ended.Swap(true) {
		return
	}
	if r.ending != nil {
		// Ended first: a request of a process the session leaves behind
		// is refused from now on (Place), so what ending records is all
		// the session changed.
		r.ending(s)
	}
	r.mu.Lock()
	delete(r.live, s.id)
	delete(r.byNS, s.nsIno)
	for id, h := range r.claims {
		if h == s {
			delete(r.claims, id)
		}
	}
	info := s.Info()
	now := time.Now()
	info.Ended = &now
	r.recent = append(r.recent, info)
	if len(r.recent) > maxRecent {
		r.recent = slices.Delete(r.recent, 0, len(r.recent)-maxRecent)
	}
	r.mu.Unlock()
	unix.Close(s.nsFd)
	unix.Close(s.pidfd)
	if r.onEnd != nil {
		r.onEnd(s)
	}
}

// Get returns the live session id, nil if there is none.
func (r *Sessions) Get(id string) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live[id]
}

// List returns the live sessions, then the recently ended ones.
func (r *Sessions) List() []Info {
	r.mu.Lock()
	live := make([]*Session, 0, len(r.live))
	for _, s := range r.live {
		live = append(live, s)
	}
	recent := slices.Clone(r.recent)
	r.mu.Unlock()
	slices.SortFunc(live, func(a, b *Session) int { return a.started.Compare(b.started) })
	out := make([]Info, 0, len(live)+len(recent))
	for _, s := range live {
		out = append(out, s.Info())
	}
	return append(out, recent...)
}

// Claim makes s the holder of intent (releasing what it held before),
// unless another live session holds it and shared is false. "" releases
// only. A check session claims nothing.
func (r *Sessions) Claim(s *Session, intent string, shared bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.spec.Check {
		return nil
	}
	if s.Ended() {
		// Its end has released what it held; it may not take more.
		return fmt.Errorf("session %s has ended", s.id)
	}
	if intent != "" && !shared {
		if h := r.claims[intent]; h != nil && h != s && !h.Ended() {
			sp := h.spec
			name := ""
			if sp.Name != "" {
				name = fmt.Sprintf(" %q", textsafe.Escape(sp.Name))
			}
			return fmt.Errorf("%w: %s is held by session %s%s (user %s, pid %d); it ends when that session does, or mark the intent shared: true",
				ErrClaimed, intent, h.id, name, textsafe.Escape(sp.User), sp.RootPid)
		}
	}
	for id, h := range r.claims {
		if h == s {
			delete(r.claims, id)
		}
	}
	if intent != "" && !shared {
		r.claims[intent] = s
	}
	return nil
}

// Holder returns the session that holds intent, nil for none.
func (r *Sessions) Holder(intent string) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.claims[intent]
}

// Select sets s's intent through check, which may refuse it, and claims
// it. It is serialised per session.
func (r *Sessions) Select(s *Session, intent string, shared bool, check func(prev string) error) (prev string, err error) {
	s.selMu.Lock()
	defer s.selMu.Unlock()
	prev = s.Intent()
	if check != nil {
		if err := check(prev); err != nil {
			return prev, err
		}
	}
	if err := r.Claim(s, intent, shared); err != nil {
		return prev, err
	}
	s.intent.Store(&intent)
	return prev, nil
}

// EndAll kills every live session (its first process, and with it the
// kernel ends the whole session) and waits up to timeout for each to be
// ended. It returns how many there were.
func (r *Sessions) EndAll(timeout time.Duration) int {
	r.mu.Lock()
	live := make([]*Session, 0, len(r.live))
	for _, s := range r.live {
		live = append(live, s)
	}
	r.mu.Unlock()
	for _, s := range live {
		_ = unix.PidfdSendSignal(s.pidfd, unix.SIGKILL, nil, 0)
	}
	deadline := time.Now().Add(timeout)
	for _, s := range live {
		for !s.Ended() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return len(live)
}

// Close ends every session's watcher (the sessions themselves are ended
// by the unmount, which kills nothing: their processes then see the
// mount gone) and releases the handles.
func (r *Sessions) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	unix.Write(r.stopFd, one[:])
	r.wg.Wait()
	unix.Close(r.stopFd)
	r.placer.close()
}

// Abandon forgets a session whose start failed after Start (its claim
// was refused): it is not listed and onEnd is not told.
func (r *Sessions) Abandon(s *Session) {
	// Before ended: the watcher, on seeing either, closes the handles.
	s.abandoned.Store(true)
	s.ended.Store(true)
	r.mu.Lock()
	delete(r.live, s.id)
	delete(r.byNS, s.nsIno)
	r.mu.Unlock()
}
