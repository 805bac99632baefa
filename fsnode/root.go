// Package fsnode implements the governed passthrough filesystem: go-fuse
// nodes and file handles that mirror a source directory, ask the policy
// before every change, and report every change made.
//
// A write, in file order: interfaces.go lists the operations the nodes
// implement; node_open_create.go opens (Node.Open, openFile); authorize.go
// decides, its steps numbered in authorizeAs; preimage.go keeps what the
// change destroys; file.go records at RELEASE through record.go. The other
// changes (node_dir_ops.go, node_setattr.go, node_xattr.go) take the same
// front door, authorize, and record at once.
package fsnode

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/attribution"
	"github.com/intentfs/intentfs/internal/creds"
	"github.com/intentfs/intentfs/internal/gitlayout"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// ControlDirName is the virtual directory at the mount root through which
// an agent talks to intentfs. It is not listed by readdir.
const ControlDirName = ".intentfs"

// Governor is what the filesystem consults before a change and informs
// after it. The daemon implements it.
type Governor interface {
	// Snapshot returns the policy in force.
	Snapshot() *policy.Snapshot
	// ActorOf places the process behind a request: the intent in force
	// for it and its agent session. A nil caller is the daemon's own.
	ActorOf(c *fuse.Caller) Actor
	// Process describes the process behind a request.
	Process(c *fuse.Caller) *ledger.Process
	// Denied records a refused change, made in session s (nil: none).
	Denied(req policy.Request, d policy.Decision, p *ledger.Process, s *ledger.Session)
	// Discarded records that the daemon removed a provisional file that
	// held content of hash preHash (kept as preImage says), made under
	// req and shown, where
	// refusals are, as refused with d: the creation looked allowed to
	// the agent. Every one is recorded in full, with its hash.
	Discarded(req policy.Request, d policy.Decision, preHash, preImage string, p *ledger.Process, s *ledger.Session)
	// Record records a change that was made.
	Record(c ledger.Change)
	// DeclaredClass is the mutation class the agent declared for its
	// writes ("" for none).
	DeclaredClass() ledger.MutationClass
	// Hold puts an allowed change to the approval rules and may wait for
	// a human: 0 lets it proceed, EACCES refuses it (recorded), EINTR
	// ends a wait the caller interrupted.
	Hold(ctx context.Context, h HoldRequest) syscall.Errno
	// LedgerErr says why changes cannot be recorded now, nil while they
	// can; a traced change is refused while it is not nil.
	LedgerErr() error
}

// Options configure a Root.
type Options struct {
	// Source is the directory the mount mirrors.
	Source string
	// Governor decides and records.
	Governor Governor
	// Log receives problems that cannot be returned to the caller.
	Log *slog.Logger
	// Objects, if set, keeps the bytes of every version a change
	// destroys; KeepMaxBytes bounds what is kept per file.
	Objects      *objects.Store
	KeepMaxBytes int64
	// ControlDir, if set, is served at ControlDirName in the mount root.
	ControlDir fs.InodeEmbedder
	// MaxHandlesPerUID bounds the open files one uid may hold (0: a
	// quarter of the descriptor limit; negative: no bound).
	MaxHandlesPerUID int
	// MaxCachedDirs bounds the directory descriptors the mount keeps
	// open between calls (0: a quarter of the descriptor limit;
	// negative: none are kept).
	MaxCachedDirs int
	// ProvisionalIdle, ProvisionalMaxLife and ProvisionalPerActor set the
	// window of provisional files (see provisional.go); 0 is the default.
	ProvisionalIdle     time.Duration
	ProvisionalMaxLife  time.Duration
	ProvisionalPerActor int
	// DataPath is DataPathPassthrough or DataPathCached ("": the
	// default); the raw filesystem must be wrapped in ElideOpen for the
	// cached one.
	DataPath string
	// Worktree, set where the source is a linked worktree, is served as
	// the mount's .git directory (see gitview.go).
	Worktree *gitlayout.Worktree
}

// Root holds the state shared by every node of one mount.
type Root struct {
	source string
	rootFd int // O_PATH handle on the source directory
	// gitView, for a linked worktree, is what the mount's .git is.
	gitView *gitView
	dev     uint64
	gov     Governor
	log     *slog.Logger
	// writeGate keeps a pre-image linked into the store out of reach of
	// writable handles.
	writeGate writerGate
	hashes    *objects.HashCache
	// classifier classifies content changes, remembering how far each
	// Go version it scanned is known to scan.
	classifier *attribution.Classifier
	objects    *objects.Store
	keepMax    int64
	control    fs.InodeEmbedder
	// callers runs calls on the source as the process that asked.
	callers *callers
	// writers are the handles open for writing, for OpenWriters.
	writers writerSet
	// cachedWriters are the nodes written on the cached data path whose
	// writes are not recorded yet (see SettleWrites).
	cachedWriters cachedWriters
	// cachedQuiet is cachedWriteQuiet, but for tests that must not race
	// the debounce.
	cachedQuiet time.Duration
	// appends are the WRITE requests in flight on the cached data path
	// made through a descriptor opened O_APPEND (see OpenElider.Write).
	appends appendWrites

	controlInode atomic.Pointer[fs.Inode]
	// noXattrAt is set when getxattrat(2) is unavailable (probed at the
	// start, or answered ENOSYS since), noFchmodat2 when fchmodat2(2) is:
	// see newsys.go.
	noXattrAt, noFchmodat2 atomic.Bool
	handles                handleLimit
	// dirFds counts the directory descriptors nodes keep open.
	dirFds dirFdCache
	// upstreamRemovals are what git removed outside the scope, to be
	// put back unless it writes them again (see upstream_removal.go).
	upstreamRemovals upstreamRemovals
	// closed is set when the root's descriptor is about to close: work
	// left in the background must not use it.
	closed atomic.Bool
	// closeOnce makes Close run once; closeErr is its result.
	closeOnce sync.Once
	closeErr  error
	// cached is set on the cached data path: the kernel opens files
	// without asking, checking the caller against the attributes this
	// mount reported, so those must be the inode's own (see Getattr).
	cached bool
	// noOpen is set once OpenElider has declined an OPEN: the kernel
	// sends no OPEN or RELEASE for files from then on.
	noOpen atomic.Bool
	// top is the root node, for invalidations made in the background.
	top *Node
	// prov are the provisional files: temporaries of atomic saves beside
	// owned names (see provisional.go).
	prov *provisionalTable
}

// NewRoot opens the source directory and returns the mount's Root: Node
// is the root node go-fuse serves, and the Root's exported methods are
// what the daemon asks of the mount. Close releases the source handle
// after unmount.
func NewRoot(o Options) (*Root, error) {
	if err := CheckOpenat2(o.Source); err != nil {
		return nil, err
	}
	switcher, err := creds.New()
	if err != nil {
		return nil, err
	}
	fd, err := syscall.Open(o.Source, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening source %s: %w", o.Source, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("stat source %s: %w", o.Source, err)
	}
	r := &Root{source: o.Source, cachedQuiet: cachedWriteQuiet, rootFd: fd, dev: uint64(st.Dev), gov: o.Governor, log: o.Log, hashes: objects.NewHashCache(), classifier: attribution.NewClassifier(), objects: o.Objects, keepMax: o.KeepMaxBytes,
		control: o.ControlDir, callers: newCallers(switcher),
		prov: newProvisionalTable(o.ProvisionalIdle, o.ProvisionalMaxLife, o.ProvisionalPerActor)}
	if o.Worktree != nil {
		if r.gitView, err = newGitView(o.Worktree); err != nil {
			syscall.Close(fd)
			return nil, fmt.Errorf("holding the git directories of the worktree %s: %w", o.Source, err)
		}
	}
	r.dirFds.max = o.MaxCachedDirs
	r.cached = o.DataPath == DataPathCached
	sys := probeNewSyscalls()
	r.noXattrAt.Store(!sys.xattrAt)
	r.noFchmodat2.Store(!sys.fchmodat2)
	if (!sys.xattrAt || !sys.fchmodat2) && r.log != nil {
		r.log.Debug("newer system calls unavailable (old kernel or seccomp); using fallbacks", "getxattrat", sys.xattrAt, "fchmodat2", sys.fchmodat2)
	}
	r.handles = handleLimit{max: o.MaxHandlesPerUID, byUID: map[uint32]int{}}
	if r.handles.max == 0 {
		r.handles.max = defaultHandlesPerUID()
	}
	r.top = &Node{root: r}
	return r, nil
}

// Node is the root node of the filesystem, for go-fuse's fs.NewNodeFS.
func (r *Root) Node() *Node { return r.top }

// Hashes returns the mount's hash cache, for status counters.
func (r *Root) Hashes() *objects.HashCache { return r.hashes }

// Close records what every writer has written, removes the provisional
// files left, puts back what git removed and did not write again, then
// releases the source directory handle. A second Close does nothing.
func (r *Root) Close() error {
	r.closeOnce.Do(func() {
		r.endCachedWritersExcept(nil)
		// The kernel sends RELEASE after close(2) has returned: a mount
		// that goes away at once (SIGTERM right after a write) may never
		// send it, or the daemon never read it. What those handles wrote
		// is recorded now, not left out of the ledger. (On the cached
		// path this also covers the handles the kernel holds, which a
		// settle checkpoints.)
		r.recordUnreleased()
		r.closeProvisional()
		r.closed.Store(true)
		r.putBackAll()
		if r.gitView != nil {
			r.gitView.close()
		}
		r.closeErr = syscall.Close(r.rootFd)
	})
	return r.closeErr
}

// OnAdd creates the control directory once the root is in the tree.
func (n *Node) OnAdd(ctx context.Context) {
	if n.root.control == nil || !n.IsRoot() {
		return
	}
	ino := n.NewPersistentInode(ctx, n.root.control, fs.StableAttr{Mode: syscall.S_IFDIR})
	n.root.controlInode.Store(ino)
}

// idFromStat mirrors go-fuse's loopback: inode numbers of the source,
// mixed with the device when a tree crosses filesystems.
func (r *Root) idFromStat(st *syscall.Stat_t) fs.StableAttr {
	swapped := (uint64(st.Dev) << 32) | (uint64(st.Dev) >> 32)
	swappedRoot := (r.dev << 32) | (r.dev >> 32)
	return fs.StableAttr{Mode: uint32(st.Mode), Ino: (swapped ^ swappedRoot) ^ st.Ino}
}
