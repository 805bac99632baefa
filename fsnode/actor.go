package fsnode

import (
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Actor is whom a request acts for: the intent in force for its process
// and the agent session the process belongs to.
type Actor struct {
	// Intent is the intent in force: the session's own inside a session,
	// the mount's outside any.
	Intent string
	// Session is the session, nil outside any.
	Session *ledger.Session
	// Versions remembers which file versions the session's processes
	// read; nil outside any session.
	Versions *agent.Versions
	// Unplaced, if set, says why the process could not be placed in or
	// outside a session: it has no intent.
	Unplaced error
}

// CodeUnplaced is the denial code of a change by a process that could not
// be placed in or outside a session.
const CodeUnplaced policy.Code = "UNPLACED_PROCESS"

// CodeStale is the code of a write to a file that changed since the
// session writing it last read it.
const CodeStale policy.Code = "STALE_FILE"

// actorOf places the process behind a request.
func (r *Root) actorOf(c *fuse.Caller) Actor { return r.gov.ActorOf(c) }

// sawAt tells the actor's session that it now knows the version of rel in
// the source: it changed rel itself.
func (a Actor) sawAt(r *Root, rel string) {
	if a.Versions == nil {
		return
	}
	var st unix.Stat_t
	if r.statBeneath(rel, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		a.Versions.Saw(rel, agent.VersionOf(&st))
	}
}

// sawFd tells the actor's session that its process now knows the version
// of rel that fd holds (it read it, or wrote it itself).
func (a Actor) sawFd(rel string, fd int) {
	if a.Versions == nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		a.Versions.Saw(rel, agent.VersionOf(&st))
	}
}
