// Package gitgate governs what git does through a mount: a branch that
// moves to a commit made in the mount is checked as `intentfs check`
// would check that commit, and the move is refused if the commit fails.
//
// "Made in the mount" is decided by the objects written through the
// mount since it started: every loose object or pack that reaches its
// final name in a git directory's object store through the mount, by any
// process other than git receiving objects from a remote (index-pack,
// unpack-objects, run as the real, root-owned git binary), is the
// agent's. A commit the repository already had, or one git received from
// elsewhere, is not the agent's authorship in the mount: a merge, a
// checkout, a fetch or a fast-forward to it is not refused. A commit made
// outside the mount and fetched in is not judged here; `intentfs check`
// on the range judges every commit, wherever it was made.
//
// The branch updates watched are every way a branch can move: a rename
// onto refs/heads/<name> (git writes <name>.lock and renames it), onto
// HEAD (detached; a symbolic HEAD must name a branch), onto packed-refs
// (each branch entry that changes). Writing a ref in place, or moving a
// directory onto refs/heads, is refused: git never does either.
package gitgate

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/intentfs/intentfs/internal/gitchange"
	"github.com/intentfs/intentfs/internal/gitcheck"
	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitlayout"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// Denial codes.
const (
	CodeCommitRefused policy.Code = "COMMIT_NOT_ACCOUNTED"
	CodeRefWrite      policy.Code = "GIT_REF_WRITE"
)

const (
	maxRefBytes     = 64 << 20 // packed-refs of a large repository
	maxIdxBytes     = 256 << 20
	maxCreated      = 1 << 20 // object ids remembered per repository
	maxAcceptedTips = 256
	maxShown        = 8 // problems named in a denial's reason
	defaultTimeout  = 20 * time.Second
)

// Config connects a Gate to its daemon.
type Config struct {
	// Source is the mount's source directory.
	Source string
	// WorktreeGitDir and CommonDir, set where the source is a linked
	// worktree, are the directories its .git stands for in the mount: git
	// runs in the first, pack indexes are read in the second.
	WorktreeGitDir, CommonDir string
	// CheckedOut, set with CommonDir, lists the branches the
	// repository's other work trees have checked out, which this mount
	// may not move (see refOwners).
	CheckedOut func() (map[string]gitlayout.Holder, error)
	// Records reads every record of the ledger, once, for the index.
	Records func(fn func(*ledger.Record)) error
	// Snapshot is the policy in force.
	Snapshot func() *policy.Snapshot
	// Process describes a caller; Record records a change.
	Process func(pid, uid, gid uint32) *ledger.Process
	Record  func(ledger.Change)
	// Committed, if set, runs after a branch moved to new commits (the
	// daemon attaches notes).
	Committed func(gitDir string)
	Log       *slog.Logger
	// Timeout bounds the git commands of one decision (default 20s).
	Timeout time.Duration
}

// Gate is the state of one mount's git directories.
type Gate struct {
	cfg   Config
	mu    sync.Mutex
	repos map[string]*repoState
	// index holds the ledger's records once a commit has been judged;
	// Add keeps it current.
	index *gitcheck.Index
	// building is set while the index is first read; early holds the
	// records added meanwhile.
	building bool
	early    []*ledger.Record
	// restore finds the earlier versions of files (see restore.go).
	versions *versionIndex
	// life is the context of the processes the gate keeps (a cat-file per
	// repository); stop ends them, and closed says Close ran.
	life   context.Context
	stop   context.CancelFunc
	closed bool
}

// New returns a Gate.
func New(cfg Config) *Gate {
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	life, stop := context.WithCancel(context.Background())
	return &Gate{cfg: cfg, repos: map[string]*repoState{}, versions: newVersionIndex(), life: life, stop: stop}
}

// repoState is what the gate knows of one git directory.
type repoState struct {
	gitDir string // in the workspace: ".git", "sub/.git"
	// ready is closed once git and startTips are set.
	ready chan struct{}
	git   *gitexec.Repo
	// startTips are the commits the repository's refs named when the
	// mount first saw it changed: history from before.
	startTips []string
	// created are the loose objects, and createdPacks the packs, written
	// through the mount by anything but git receiving objects; overflow
	// is set when the objects can no longer be told apart (too many, or a
	// directory of objects moved into place): every new commit counts as
	// made in the mount.
	created      map[string]bool
	createdPacks map[string]bool
	overflow     bool
	// accepted are commits the gate judged and let a branch move to.
	accepted     map[string]bool
	acceptedTips []string
	// fetchedTips are commits git fetch from a configured remote wrote
	// into remote-tracking refs, and remotes caches which remote names
	// the configuration has (see noteFetched).
	fetchedTips []string
	remotes     map[string]bool
	// tipCache lists the commits restores are looked for in.
	tipCache *tipCache
	// blobs reads committed blobs for every check (see Gate.blobs).
	blobs *gitexec.Blobs
}

// knownTips are the commits whose history is not the mount's work: what
// the refs named when the gate first saw the repository, what it let
// branches move to, and what git fetch brought. g.mu is held.
func (st *repoState) knownTips() []string {
	out := make([]string, 0, len(st.startTips)+len(st.acceptedTips)+len(st.fetchedTips))
	out = append(append(append(out, st.startTips...), st.acceptedTips...), st.fetchedTips...)
	return out
}

// Add indexes a record the daemon has just written.
func (g *Gate) Add(r *ledger.Record) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.index != nil:
		g.index.Add(r)
	case g.building:
		g.early = append(g.early, r)
	}
	g.versions.add(r)
}

// WatchGit implements gitchange.Watcher.
func (g *Gate) WatchGit(ctx context.Context, w gitchange.Change) (*policy.Decision, func()) {
	req := w.Req
	dir1, in1, ok1 := policy.GitDirOf(req.Path)
	dir2, in2, ok2 := policy.GitDirOf(req.Path2)
	var pid, uid, gid uint32
	if w.Caller != nil {
		pid, uid, gid = w.Caller.Pid, w.Caller.Uid, w.Caller.Gid
	}
	receiver := func() bool { return isReceiver(g.cfg.Process(pid, uid, gid)) }
	if deny := g.ownedRefChange(ctx, w); deny != nil {
		return deny, nil
	}
	if req.Op == policy.OpLink && ok2 && classifyRef(in2) != notRef {
		// A second name for a ref, HEAD or packed-refs is a way to write
		// it in place, past the rename that is judged.
		return refuse(req.Path, "making a hard link to "+in2+" is refused: writing through it would move a branch unchecked, and git never does this"), nil
	}
	if req.Op == policy.OpSymlink && ok1 {
		// git never makes a symlink in its own directory, and one there
		// (refs/heads pointing into the work tree, a pack index) would
		// put what git reads out of the gate's sight.
		return refuse(req.Path, "making a symlink inside a git directory is refused: git never does, and one there would redirect what git reads past the commit check"), nil
	}
	switch req.Op {
	case policy.OpRename:
		exchange := req.RenameFlags&policy.RenameExchange != 0
		if ok1 && !exchange {
			if k := classifyRef(in1); k != notRef {
				// git moves a ref only by renaming its .lock over it:
				// moving a ref, HEAD, packed-refs or refs/heads away
				// would reveal or replace a branch unchecked.
				return refuse(req.Path, "moving "+in1+" away is refused: every branch update is checked, and git never does this"), nil
			}
		}
		if ok1 && exchange {
			g.observe(dir1, in1, req.IsDir2, receiver)
			if classifyRef(in1) != notRef {
				return refuse(req.Path, "exchanging a git ref with another file is refused: every branch update is checked, and git never does this"), nil
			}
		}
		if !ok2 {
			return nil, nil
		}
		g.observe(dir2, in2, req.IsDir, receiver)
		kind := classifyRef(in2)
		switch {
		case kind == notRef:
			if strings.HasPrefix(in2, "refs/remotes/") && !req.IsDir {
				g.remoteTrackingUpdate(ctx, w, dir2)
			}
			return nil, nil
		case exchange:
			return refuse(req.Path2, "exchanging a git ref with another file is refused: every branch update is checked, and git never does this"), nil
		case kind == reftable:
			return refuse(req.Path2, "this repository keeps its refs in a reftable, which intentfs cannot check at commit time; use the files ref backend in the mount"), nil
		case req.IsDir && (kind == refDir || kind == branchRef):
			return refuse(req.Path2, "moving a directory onto "+in2+" is refused: every branch update is checked, and git never does this"), nil
		case kind == refDir:
			return nil, nil
		}
		return g.refUpdate(ctx, w, dir2, in2, kind)
	case policy.OpCreate, policy.OpOpenWrite, policy.OpTruncate, policy.OpLink, policy.OpSymlink, policy.OpMknod,
		policy.OpFallocate, policy.OpCopyFileRange, policy.OpChmod:
		if !ok1 {
			return nil, nil
		}
		g.observe(dir1, in1, false, receiver)
		switch classifyRef(in1) {
		case branchRef, headRef, packedRefs, reftable:
			if req.Op == policy.OpChmod {
				return nil, nil
			}
			return refuse(req.Path, "writing "+in1+" in place is refused: git updates a ref by renaming its .lock file over it, which is checked; a ref written any other way would move a branch unchecked"), nil
		}
	case policy.OpUnlink:
		if ok1 && classifyRef(in1) == branchRef {
			return g.looseRefRemoval(ctx, w, dir1, in1)
		}
	}
	return nil, nil
}

// remoteTrackingUpdate notes what a rename onto a remote-tracking ref
// brings, if git fetch made it (see noteFetched).
func (g *Gate) remoteTrackingUpdate(ctx context.Context, w gitchange.Change, gitDir string) {
	if w.Caller == nil {
		return
	}
	p := g.cfg.Process(w.Caller.Pid, w.Caller.Uid, w.Caller.Gid)
	if _, ok := fetchRemote(p); !ok {
		return
	}
	content, err := w.Read(w.Req.Path, maxRefBytes)
	if err != nil {
		return
	}
	st := g.repo(ctx, gitDir)
	if st.git == nil {
		return
	}
	g.noteFetched(ctx, st, p, content)
}

// looseRefRemoval judges the removal of a loose branch: the branch then
// becomes what packed-refs says of it, if anything, and that value is
// judged as if the branch moved there.
func (g *Gate) looseRefRemoval(ctx context.Context, w gitchange.Change, gitDir, inner string) (*policy.Decision, func()) {
	req := w.Req
	content, err := w.Read(path.Join(gitDir, "packed-refs"), maxRefBytes)
	if err != nil {
		return nil, nil // no packed-refs: the branch is deleted
	}
	packed, ok := parsePackedBranches(content)
	if !ok {
		return refuse(req.Path, "removing "+inner+" is refused: packed-refs does not parse, so what the branch would become cannot be checked"), nil
	}
	oid, ok := packed[inner]
	if !ok {
		return nil, nil
	}
	st := g.repo(ctx, gitDir)
	if st.git == nil {
		return refuse(req.Path, "cannot run git on "+gitDir+" to check the commit"), nil
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	ups := []update{{ref: inner, new: oid, oldRef: inner}}
	rep, ids, err := g.judge(ctx, st, ups)
	if err != nil {
		return refuse(req.Path, fmt.Sprintf("the commit packed-refs names for %s could not be checked (%v); removing the loose branch is refused until it can be", inner, err)), nil
	}
	return g.verdict(w, st, ups, req.Path, rep, ids)
}

// verdict is the gate's answer to a judged branch update at rel: the
// refusal naming the problems, or the function that records the commits
// once the change is made.
func (g *Gate) verdict(w gitchange.Change, st *repoState, ups []update, rel string, rep *gitcheck.Report, ids []string) (*policy.Decision, func()) {
	if !rep.OK() {
		return &policy.Decision{Code: CodeCommitRefused, Validation: policy.ValidationFail, Path: rel,
			Reason: commitReason(ups, rep, g.outsideNote(w.Req.Intent))}, nil
	}
	var proc *ledger.Process
	if w.Caller != nil {
		proc = g.cfg.Process(w.Caller.Pid, w.Caller.Uid, w.Caller.Gid)
	}
	by := committer{intent: w.Req.Intent, proc: proc, session: w.Session}
	return nil, func() { g.accept(st, ups, ids, rep, rel, by) }
}

func refuse(rel, reason string) *policy.Decision {
	return &policy.Decision{Code: CodeRefWrite, Reason: reason, Validation: policy.ValidationFail, Path: rel}
}

// repo returns the state of a git directory, starting it (and noting the
// history it holds now) the first time the mount changes it. The first
// caller starts it; the requests that arrive meanwhile (git writes many
// objects at once) wait for it rather than each running git.
func (g *Gate) repo(ctx context.Context, gitDir string) *repoState {
	g.mu.Lock()
	st := g.repos[gitDir]
	if st != nil {
		g.mu.Unlock()
		<-st.ready
		return st
	}
	st = &repoState{gitDir: gitDir, ready: make(chan struct{}), created: map[string]bool{}, createdPacks: map[string]bool{}, accepted: map[string]bool{},
		remotes: map[string]bool{}}
	g.repos[gitDir] = st
	g.mu.Unlock()
	defer close(st.ready)
	gitPath := path.Join(g.cfg.Source, gitDir)
	if gitDir == ".git" && g.cfg.WorktreeGitDir != "" {
		gitPath = g.cfg.WorktreeGitDir
	}
	git, err := gitexec.Open(gitPath)
	if err != nil {
		return st
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	var tips []string
	if out, err := git.Output(ctx, "for-each-ref", "--format=%(objectname)"); err == nil {
		seen := map[string]bool{}
		for _, l := range strings.Fields(string(out)) {
			if gitexec.ValidOID(l) && !seen[l] {
				seen[l] = true
				tips = append(tips, l)
			}
		}
	}
	g.mu.Lock()
	st.git, st.startTips = git, tips
	g.mu.Unlock()
	return st
}

// observe notes an object written through the mount.
func (g *Gate) observe(gitDir, inner string, isDir bool, receiver func() bool) {
	oid, loose := looseObject(inner)
	pack, packed := packFile(inner)
	moved := isDir && (objectDir(inner) || inner == "objects/pack" || loose)
	if !loose && !packed && !moved {
		return
	}
	if !moved && receiver() {
		return
	}
	st := g.repo(context.Background(), gitDir)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case moved || len(st.created) >= maxCreated:
		st.overflow = true
	case loose:
		st.created[oid] = true
	case packed:
		st.createdPacks[pack] = true
	}
}

// isReceiver reports whether p is git receiving objects from a remote:
// the real git binary (root-owned, not writable by others) running
// index-pack or unpack-objects.
func isReceiver(p *ledger.Process) bool {
	if p == nil || len(p.Cmdline) < 2 || !trustedGit(p.Exe) {
		return false
	}
	sub := p.Cmdline[1]
	return sub == "index-pack" || sub == "unpack-objects"
}

// update is one branch moving.
type update struct {
	ref      string // "refs/heads/main", "HEAD"
	old, new string
	// oldRef, when old is not known, is the ref whose current commit is
	// old: the rev-list that lists the new commits resolves it (as
	// rev-parse would), so it costs no git process of its own.
	oldRef string
}

// refUpdate judges a rename onto a ref.
func (g *Gate) refUpdate(ctx context.Context, w gitchange.Change, gitDir, inner string, kind refKind) (*policy.Decision, func()) {
	req := w.Req
	content, err := w.Read(req.Path, maxRefBytes)
	if err != nil {
		return refuse(req.Path2, fmt.Sprintf("cannot read what would become %s: %v", inner, err)), nil
	}
	if w.Judged != nil {
		w.Judged(content)
	}
	st := g.repo(ctx, gitDir)
	if st.git == nil {
		return refuse(req.Path2, "cannot run git on "+gitDir+" to check the commit"), nil
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	var ups []update
	switch kind {
	case branchRef, headRef:
		v, ok := parseLooseRef(content)
		if !ok {
			return refuse(req.Path2, inner+" would not hold a commit id or a symbolic ref"), nil
		}
		if v.target != "" {
			if kind == headRef && strings.HasPrefix(v.target, "refs/heads/") {
				return nil, nil // switching branches: each branch is checked when it moves
			}
			return refuse(req.Path2, fmt.Sprintf("%s would point at %s: HEAD may name a branch (refs/heads/...) and a branch may not be a symbolic ref, or commits would move a ref that is not checked",
				inner, textsafe.Escape(v.target))), nil
		}
		ref := inner
		if kind == headRef {
			ref = "HEAD"
		}
		u := update{ref: ref, new: v.oid, oldRef: ref}
		if strings.HasPrefix(inner, "worktrees/") {
			u.ref, u.oldRef = inner, ""
		}
		ups = append(ups, u)
	case packedRefs:
		nb, ok := parsePackedBranches(content)
		if !ok {
			return refuse(req.Path2, "the new packed-refs does not parse"), nil
		}
		ob := map[string]string{}
		if cur, err := w.Read(path.Join(gitDir, "packed-refs"), maxRefBytes); err == nil {
			ob, _ = parsePackedBranches(cur)
		}
		for name, oid := range nb {
			if ob[name] != oid {
				ups = append(ups, update{ref: name, old: ob[name], new: oid})
			}
		}
	}
	if len(ups) == 0 {
		return nil, nil
	}
	// The ledger must hold what the commit was written from.
	w.Checkpoint()
	rep, ids, err := g.judge(ctx, st, ups)
	if err != nil {
		g.cfg.Log.Warn("checking a branch update failed", "ref", inner, "err", err)
		return refuse(req.Path2, fmt.Sprintf("the commit could not be checked (%v); the branch update is refused until it can be", err)), nil
	}
	return g.verdict(w, st, ups, req.Path2, rep, ids)
}

// judge lists the commits made in the mount that the updates bring onto
// branches and not judged before, and checks them.
func (g *Gate) judge(ctx context.Context, st *repoState, ups []update) (*gitcheck.Report, []string, error) {
	for _, u := range ups {
		if !gitexec.ValidOID(u.new) {
			return nil, nil, fmt.Errorf("%q is not a commit id", u.new)
		}
	}
	g.mu.Lock()
	known := st.knownTips()
	g.mu.Unlock()
	input := func(withRefs bool) []byte {
		var in strings.Builder
		for _, u := range ups {
			fmt.Fprintf(&in, "%s\n", u.new)
			switch {
			case u.old != "":
				fmt.Fprintf(&in, "^%s\n", u.old)
			case u.oldRef != "" && withRefs:
				fmt.Fprintf(&in, "^%s\n", u.oldRef)
			}
		}
		for _, t := range known {
			fmt.Fprintf(&in, "^%s\n", t)
		}
		return []byte(in.String())
	}
	// --parents: which of them are merges is known without asking git
	// again.
	out, err := st.git.OutputInput(ctx, input(true), "rev-list", "--parents", "--stdin")
	if err != nil && g.dropMissingTips(ctx, st) {
		// A commit the history was known by is gone (the agent deleted
		// the branch and pruned it): without it, the list can be made.
		g.mu.Lock()
		known = st.knownTips()
		g.mu.Unlock()
		out, err = st.git.OutputInput(ctx, input(true), "rev-list", "--parents", "--stdin")
	}
	if err != nil && slices.ContainsFunc(ups, func(u update) bool { return u.oldRef != "" }) {
		// The branch does not exist yet (its first commit, or an unborn
		// HEAD): nothing to exclude.
		out, err = st.git.OutputInput(ctx, input(false), "rev-list", "--parents", "--stdin")
	}
	if err != nil {
		return nil, nil, err
	}
	var cands []string
	parents := map[string][]string{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || !gitexec.ValidOID(f[0]) {
			continue
		}
		cands = append(cands, f[0])
		parents[f[0]] = f[1:]
	}
	ids, err := g.madeHere(st, cands)
	if err != nil {
		return nil, nil, err
	}
	if len(ids) == 0 {
		return &gitcheck.Report{Problems: []gitcheck.Finding{}, Accounted: map[string][]string{}}, nil, nil
	}
	if err := g.ensureIndex(); err != nil {
		return nil, nil, err
	}
	snap := g.cfg.Snapshot()
	if snap == nil || snap.Intents == nil {
		return nil, nil, fmt.Errorf("no valid policy is loaded")
	}
	below := strings.TrimSuffix(st.gitDir, ".git")
	// The check runs git without the gate's lock: records written
	// meanwhile go into the index (which locks itself) and do not wait.
	g.mu.Lock()
	index := g.index
	g.mu.Unlock()
	check := func(blobs *gitexec.Blobs) (*gitcheck.Report, error) {
		c := &gitcheck.Checker{Repo: st.git, Index: index, Intents: snap.Intents, Ignore: snap.Ignore, Below: below,
			Blobs: blobs, Parents: parents}
		return c.CheckNew(ctx, ids)
	}
	blobs, err := g.blobs(st)
	if err != nil {
		return nil, nil, err
	}
	// The cat-file outlives this decision: if the decision's time runs
	// out, the process is stopped (and replaced for the next one).
	stop := context.AfterFunc(ctx, blobs.Kill)
	rep, err := check(blobs)
	stop()
	if blobs.Broken() {
		g.dropBlobs(st, blobs)
		if ctx.Err() == nil {
			// It failed on its own (killed from outside, out of memory):
			// once more with a process of this check's own.
			rep, err = check(nil)
		}
	}
	return rep, ids, err
}

// dropMissingTips forgets the known tips whose commits the repository no
// longer has, and reports whether there were any. (A missing new commit
// is not forgiven this way: rev-list still fails on it.)
func (g *Gate) dropMissingTips(ctx context.Context, st *repoState) bool {
	g.mu.Lock()
	known := st.knownTips()
	g.mu.Unlock()
	out, err := st.git.OutputInput(ctx, []byte(strings.Join(known, "\n")+"\n"), "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return false
	}
	missing := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[1] == "missing" {
			missing[f[0]] = true
		}
	}
	if len(missing) == 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	gone := func(id string) bool { return missing[id] }
	st.startTips = slices.DeleteFunc(st.startTips, gone)
	st.acceptedTips = slices.DeleteFunc(st.acceptedTips, gone)
	st.fetchedTips = slices.DeleteFunc(st.fetchedTips, gone)
	return true
}

// blobs returns the repository's long-lived cat-file, starting it if
// needed: one process for every check, not one per commit.
func (g *Gate) blobs(st *repoState) (*gitexec.Blobs, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st.blobs != nil {
		return st.blobs, nil
	}
	if g.closed {
		return nil, fmt.Errorf("the mount is closing")
	}
	b, err := st.git.Blobs(g.life)
	if err != nil {
		return nil, err
	}
	st.blobs = b
	return b, nil
}

// dropBlobs forgets a cat-file that failed and reaps it.
func (g *Gate) dropBlobs(st *repoState, b *gitexec.Blobs) {
	g.mu.Lock()
	if st.blobs == b {
		st.blobs = nil
	}
	g.mu.Unlock()
	b.Kill()
	_ = b.Close()
}

// Close stops the git processes the gate keeps.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	var all []*gitexec.Blobs
	for _, st := range g.repos {
		if st.blobs != nil {
			all = append(all, st.blobs)
			st.blobs = nil
		}
	}
	g.mu.Unlock()
	g.stop()
	for _, b := range all {
		_ = b.Close()
	}
}

// madeHere filters commits to those made in the mount and not yet
// accepted. A linked worktree's objects are shared with the repository's
// other work trees, whose writes this mount does not see: there a commit
// the mount did not see made may have been made anywhere (another
// agent's identical commit, refused by its own gate), so every commit new
// to the ref is judged.
func (g *Gate) madeHere(st *repoState, cands []string) ([]string, error) {
	g.mu.Lock()
	overflow := st.overflow || (st.gitDir == ".git" && g.cfg.CommonDir != "")
	var packs []string
	for p := range st.createdPacks {
		packs = append(packs, p)
	}
	var out, unknown []string
	for _, id := range cands {
		switch {
		case st.accepted[id]:
		case overflow || st.created[id]:
			out = append(out, id)
		default:
			unknown = append(unknown, id)
		}
	}
	g.mu.Unlock()
	if len(packs) == 0 || len(unknown) == 0 {
		return out, nil
	}
	for _, p := range packs {
		root, dir := g.objectsOf(st.gitDir)
		idx, err := readIdx(root, dir, p)
		if err != nil && !packBeside(root, dir, p) {
			continue // git loads no index without its pack
		}
		if err != nil {
			// A pack made in the mount that cannot be read: any new
			// commit may be in it.
			return append(out, unknown...), nil
		}
		rest := unknown[:0]
		for _, id := range unknown {
			has, err := idxHasObject(idx, id)
			if err != nil || has {
				out = append(out, id)
			} else {
				rest = append(rest, id)
			}
		}
		unknown = rest
	}
	return out, nil
}

// ensureIndex reads the ledger into the index the first time a commit is
// judged; Add keeps it current from then on.
func (g *Gate) ensureIndex() error {
	g.mu.Lock()
	if g.index != nil || g.building {
		g.mu.Unlock()
		return g.waitIndex()
	}
	g.building = true
	g.mu.Unlock()
	ix := gitcheck.NewIndex()
	vs := newVersionIndex()
	err := g.cfg.Records(func(r *ledger.Record) { ix.Add(r); vs.add(r) })
	g.mu.Lock()
	defer g.mu.Unlock()
	g.building = false
	if err != nil {
		g.early = nil
		return fmt.Errorf("reading the ledger: %w", err)
	}
	for _, r := range g.early {
		ix.Add(r)
	}
	// Versions recorded while the ledger was read come after it.
	for p, m := range g.versions.first {
		for h, by := range m {
			vs.put(p, h, by)
		}
	}
	g.versions = vs
	g.early = nil
	g.index = ix
	return nil
}

// waitIndex waits for another request's first reading of the ledger.
func (g *Gate) waitIndex() error {
	for deadline := time.Now().Add(g.cfg.Timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		g.mu.Lock()
		ready, building := g.index != nil, g.building
		g.mu.Unlock()
		if ready {
			return nil
		}
		if !building {
			return fmt.Errorf("the ledger could not be read")
		}
	}
	return fmt.Errorf("timed out waiting for the ledger to be read")
}

// committer is who moved a branch: the intent, process and session its
// commit records name.
type committer struct {
	intent  string
	proc    *ledger.Process
	session *ledger.Session
}

// accept runs once the branch moved: the commits are remembered, and each
// gets a commit record.
func (g *Gate) accept(st *repoState, ups []update, ids []string, rep *gitcheck.Report, refPath string, by committer) {
	g.mu.Lock()
	for _, id := range ids {
		st.accepted[id] = true
	}
	for _, u := range ups {
		st.acceptedTips = append(st.acceptedTips, u.new)
	}
	if n := len(st.acceptedTips); n > maxAcceptedTips {
		st.acceptedTips = append([]string(nil), st.acceptedTips[n-maxAcceptedTips:]...)
	}
	g.mu.Unlock()
	for _, id := range ids {
		g.cfg.Record(ledger.Change{Event: ledger.EventCommit, Path: refPath, Intent: by.intent, Commit: id, Records: rep.Accounted[id],
			Op: "commit", Process: by.proc, Session: by.session, Reason: fmt.Sprintf("%s moved to %s, made in the mount; %d record(s) account for it", ups[0].ref, id, len(rep.Accounted[id]))})
	}
	if len(ids) > 0 && g.cfg.Committed != nil {
		g.cfg.Committed(st.gitDir)
	}
}

// outsideNote returns what to add to a problem's path outside the scope
// of intent, the committer's: the commonest cause, which the problem
// itself ("matches no recorded version") does not name.
func (g *Gate) outsideNote(intent string) func(path string) string {
	in := g.cfg.Snapshot().Intents.Get(intent)
	return func(p string) string {
		if in == nil || in.InScope(p) {
			return ""
		}
		return " (outside the scope of " + in.ID + ")"
	}
}

// commitReason names the problems of a refused update; note adds to a
// path what the committer's scope says of it.
func commitReason(ups []update, rep *gitcheck.Report, note func(path string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s would move to commit(s) made in the mount that fail intentfs check:", ups[0].ref)
	for i, p := range rep.Problems {
		if i == maxShown {
			fmt.Fprintf(&b, "; and %d more", len(rep.Problems)-i)
			break
		}
		fmt.Fprintf(&b, " %s %s%s: %s;", p.Commit[:12], textsafe.Escape(p.Path), note(p.Path), p.Detail)
	}
	b.WriteString(" write the content through the mount under an intent whose scope covers it, then commit again")
	return strings.TrimSuffix(b.String(), ";")
}
