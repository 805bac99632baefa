// Package agent keeps the agent sessions of one mount: processes that
// `intentfs run` started in a pid namespace of their own, each with its
// own active intent, its claim on that intent, and the versions of the
// files it read.
//
// A session is identified by its pid namespace. Every process the agent
// starts, however it detaches (double fork, setsid, unshare of a user,
// mount or pid namespace, exec of a set-ID program), lives in that
// namespace or in one nested below it: a process cannot move its own pid
// namespace, only choose one below it for its children. The daemon holds
// a handle on the namespace while the session lives, so its inode number
// is not reused for another.
package agent

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/intentfs/intentfs/ledger"
)

// Spec is what a session is started with.
type Spec struct {
	// Name is a label for people ("" for none).
	Name string `json:"name,omitempty"`
	// User is the account the agent runs as, and Uid/Gid its ids.
	User string `json:"user"`
	Uid  uint32 `json:"uid"`
	Gid  uint32 `json:"gid"`
	// Intent is the intent selected at start ("" for none); Pinned means
	// the session may not select another.
	Intent string `json:"intent,omitempty"`
	Pinned bool   `json:"pinned,omitempty"`
	// Model and Conversation go to every record of the session.
	Model        string `json:"model,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	// Check marks a session that runs acceptance checks: it does not
	// claim its intent, so the agent working on it keeps its claim.
	Check bool `json:"check,omitempty"`
	// RootPid is the session's first process, as the daemon sees it: the
	// init of its pid namespace.
	RootPid int `json:"root_pid"`
}

// Info describes a session for `intentfs sessions` and status.
type Info struct {
	ID string `json:"id"`
	Spec
	Intent  string     `json:"intent,omitempty"`
	Started time.Time  `json:"started"`
	Ended   *time.Time `json:"ended,omitempty"`
	Live    bool       `json:"live"`
	Changes uint64     `json:"changes"`
	Denials uint64     `json:"denials"`
}

// Session is one running agent session.
type Session struct {
	id      string
	spec    Spec
	started time.Time
	ref     *ledger.Session

	// nsIno identifies the session's pid namespace; nsFd keeps it alive
	// so the number is not reused while the session is known. pidfd is
	// the root process's, which tells when the session ends.
	nsIno uint64
	nsFd  int
	pidfd int

	intent atomic.Pointer[string]
	ended  atomic.Bool
	// abandoned marks a session whose start was refused after it was
	// registered; its end is not reported.
	abandoned atomic.Bool
	changes   atomic.Uint64
	denials   atomic.Uint64

	// selMu orders a session's selections with its claim.
	selMu sync.Mutex

	versions *Versions
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Spec returns what the session was started with.
func (s *Session) Spec() Spec { return s.spec }

// Ref is the session as its records name it.
func (s *Session) Ref() *ledger.Session { return s.ref }

// Intent returns the session's active intent, "" for none.
func (s *Session) Intent() string {
	if p := s.intent.Load(); p != nil {
		return *p
	}
	return ""
}

// Ended reports whether the session is over; its processes are being
// killed and are given no intent.
func (s *Session) Ended() bool { return s.ended.Load() }

// Pinned reports whether the session's intent was fixed at start.
func (s *Session) Pinned() bool { return s.spec.Pinned }

// Versions returns what the session's processes last read.
func (s *Session) Versions() *Versions { return s.versions }

// CountChange and CountDenial keep the session's counters.
func (s *Session) CountChange() { s.changes.Add(1) }

// CountDenial counts a refused change.
func (s *Session) CountDenial() { s.denials.Add(1) }

// Info describes the session now.
func (s *Session) Info() Info {
	return Info{ID: s.id, Spec: s.spec, Intent: s.Intent(), Started: s.started, Live: !s.Ended(),
		Changes: s.changes.Load(), Denials: s.denials.Load()}
}
