package gitgate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/gitchange"
	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// The gate is tested against a real repository in a temporary directory
// standing in for the mount's source, with the requests the mount would
// send it: what the kernel asked, who asked, and a reader of the source.

const (
	agentPid    = 42 // the agent's git commit, checkout, ...
	receiverPid = 43 // git index-pack: receiving objects from a remote
	fetchPid    = 44 // git fetch origin
	forgedPid   = 45 // a program named git that the agent wrote
)

type gateFixture struct {
	t    *testing.T
	src  string
	base string // the commit main named when the gate started
	gate *Gate
	// records is the ledger the gate reads the first time it judges.
	records []*ledger.Record

	mu        sync.Mutex
	recorded  []ledger.Change
	committed []string
	judged    [][]byte
}

// systemGit is the git on PATH, which the gate must trust as git: root's,
// writable by no one else.
func systemGit(t *testing.T) string {
	t.Helper()
	exe, err := exec.LookPath("git")
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil || !trustedGit(exe) {
		t.Skipf("the git on PATH (%q, %v) is not a root-owned git, the only kind the gate trusts", exe, err)
	}
	return exe
}

func newGateFixture(t *testing.T) *gateFixture {
	t.Helper()
	git := systemGit(t)
	src := t.TempDir()
	gittest.Init(t, src)
	f := &gateFixture{t: t, src: src}
	f.base = gittest.Commit(t, src, "base", map[string]string{"README.md": "# project\n", "src/a.go": "package a\n"})
	intents, _, err := policy.ParseIntents("p.yaml", []byte(gittest.Policy))
	if err != nil {
		t.Fatal(err)
	}
	snap := &policy.Snapshot{Intents: intents}
	procs := map[uint32]*ledger.Process{
		agentPid:    {Pid: agentPid, Uid: 1000, Comm: "git", Exe: git, Cmdline: []string{"git", "commit"}},
		receiverPid: {Pid: receiverPid, Uid: 1000, Comm: "git", Exe: git, Cmdline: []string{"git", "index-pack", "--stdin"}},
		fetchPid:    {Pid: fetchPid, Uid: 1000, Comm: "git", Exe: git, Cmdline: []string{"git", "fetch", "origin"}},
		forgedPid:   {Pid: forgedPid, Uid: 1000, Comm: "git", Exe: filepath.Join(src, "git"), Cmdline: []string{"git", "index-pack"}},
	}
	f.gate = New(Config{
		Source: src,
		Records: func(fn func(*ledger.Record)) error {
			for _, r := range f.records {
				fn(r)
			}
			return nil
		},
		Snapshot: func() *policy.Snapshot { return snap },
		Process:  func(pid, uid, gid uint32) *ledger.Process { return procs[pid] },
		Record: func(c ledger.Change) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.recorded = append(f.recorded, c)
		},
		Committed: func(gitDir string) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.committed = append(f.committed, gitDir)
		},
	})
	t.Cleanup(f.gate.Close)
	// The mount's first change to the repository: the gate notes the
	// history it holds now.
	f.gate.repo(context.Background(), ".git")
	return f
}

// change is the request the mount sends for req, by the process pid.
func (f *gateFixture) change(req policy.Request, pid uint32) gitchange.Change {
	return gitchange.Change{
		Req:    req,
		Caller: &fuse.Caller{Owner: fuse.Owner{Uid: 1000, Gid: 1000}, Pid: pid},
		Read: func(rel string, max int64) ([]byte, error) {
			b, err := os.ReadFile(filepath.Join(f.src, rel))
			if int64(len(b)) > max {
				b = b[:max]
			}
			return b, err
		},
		Checkpoint: func() {},
		Judged: func(content []byte) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.judged = append(f.judged, content)
		},
	}
}

func (f *gateFixture) watch(req policy.Request, pid uint32) (*policy.Decision, func()) {
	f.t.Helper()
	return f.gate.WatchGit(context.Background(), f.change(req, pid))
}

// craft makes a commit on top of parent holding files, with git's
// plumbing in the source (no ref moves), and returns it.
func (f *gateFixture) craft(parent string, files map[string]string) string {
	f.t.Helper()
	gittest.Git(f.t, f.src, "read-tree", parent)
	for p, c := range files {
		gittest.Write(f.t, f.src, map[string]string{p: c})
		gittest.Git(f.t, f.src, "update-index", "--add", p)
	}
	tree := gittest.Git(f.t, f.src, "write-tree")
	gittest.Git(f.t, f.src, "read-tree", "HEAD")
	return gittest.Git(f.t, f.src, "commit-tree", "-p", parent, "-m", "crafted", tree)
}

// writtenInMount tells the gate, as the mount would, that pid renamed
// every object commit brings over parent into the object store.
func (f *gateFixture) writtenInMount(commit, parent string, pid uint32) {
	f.t.Helper()
	for _, l := range strings.Split(gittest.Git(f.t, f.src, "rev-list", "--objects", commit, "^"+parent), "\n") {
		oid, _, _ := strings.Cut(l, " ")
		dst := ".git/objects/" + oid[:2] + "/" + oid[2:]
		if d, after := f.watch(policy.Request{Op: policy.OpRename, Path: ".git/objects/" + oid[:2] + "/tmp_obj_x", Path2: dst}, pid); d != nil || after != nil {
			f.t.Fatalf("writing object %s: %+v", oid, d)
		}
	}
}

// record is a ledger record of writing content at path under intent.
func (f *gateFixture) record(path, content, intent string) *ledger.Record {
	return ledger.NewRecord(ledger.Change{Event: ledger.EventWrite, Path: path, PostHash: gittest.Sha(content), Intent: intent}, "test")
}

// moveBranch writes main.lock with value and asks the gate about git
// renaming it over refs/heads/main, as the agent in INT-001.
func (f *gateFixture) moveBranch(value string) (*policy.Decision, func()) {
	f.t.Helper()
	gittest.Write(f.t, f.src, map[string]string{".git/refs/heads/main.lock": value + "\n"})
	return f.watch(policy.Request{Op: policy.OpRename, Path: ".git/refs/heads/main.lock", Path2: ".git/refs/heads/main", Intent: "INT-001"}, agentPid)
}

// TestWatchGitRefusesWhatGitNeverDoes: ways of changing a ref that skip
// the rename git makes (and that the gate judges) are refused outright;
// what git does do, and paths outside git directories, pass.
func TestWatchGitRefusesWhatGitNeverDoes(t *testing.T) {
	f := newGateFixture(t)
	tests := []struct {
		name string
		req  policy.Request
		// refused is part of the reason of a refusal, "" when allowed.
		refused string
	}{
		{"hard link to a branch", policy.Request{Op: policy.OpLink, Path: "src/x", Path2: ".git/refs/heads/main"}, "hard link"},
		{"hard link to packed-refs", policy.Request{Op: policy.OpLink, Path: ".git/pr", Path2: ".git/packed-refs"}, "hard link"},
		{"symlink in a git directory", policy.Request{Op: policy.OpSymlink, Path: ".git/refs/heads/evil"}, "symlink"},
		{"a branch moved away", policy.Request{Op: policy.OpRename, Path: ".git/refs/heads/main", Path2: "src/main"}, "moving refs/heads/main away"},
		{"refs/heads moved away", policy.Request{Op: policy.OpRename, Path: ".git/refs/heads", Path2: ".git/refs/old", IsDir: true}, "moving refs/heads away"},
		{"a branch exchanged", policy.Request{Op: policy.OpRename, Path: ".git/refs/heads/main", Path2: "src/x", RenameFlags: policy.RenameExchange}, "exchanging"},
		{"a file exchanged with a branch", policy.Request{Op: policy.OpRename, Path: "src/x", Path2: ".git/refs/heads/main", RenameFlags: policy.RenameExchange}, "exchanging"},
		{"a directory onto refs/heads", policy.Request{Op: policy.OpRename, Path: "src/r", Path2: ".git/refs/heads", IsDir: true}, "moving a directory onto refs/heads"},
		{"a reftable", policy.Request{Op: policy.OpRename, Path: ".git/reftable/t.lock", Path2: ".git/reftable/tables.list"}, "reftable"},
		{"a branch written in place", policy.Request{Op: policy.OpOpenWrite, Path: ".git/refs/heads/main"}, "in place"},
		{"HEAD truncated", policy.Request{Op: policy.OpTruncate, Path: ".git/HEAD"}, "in place"},
		{"packed-refs created", policy.Request{Op: policy.OpCreate, Path: ".git/packed-refs"}, "in place"},
		{"a branch's mode", policy.Request{Op: policy.OpChmod, Path: ".git/refs/heads/main"}, ""},
		{"a rename onto a ref directory", policy.Request{Op: policy.OpRename, Path: ".git/refs/x", Path2: ".git/refs/heads/topic", IsDir: true}, "moving a directory onto"},
		{"a tag", policy.Request{Op: policy.OpRename, Path: ".git/refs/tags/v1.lock", Path2: ".git/refs/tags/v1"}, ""},
		{"the index", policy.Request{Op: policy.OpRename, Path: ".git/index.lock", Path2: ".git/index"}, ""},
		{"a work tree file", policy.Request{Op: policy.OpRename, Path: "src/a.go.tmp", Path2: "src/a.go"}, ""},
		{"a branch removed with nothing packed", policy.Request{Op: policy.OpUnlink, Path: ".git/refs/heads/main"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, after := f.watch(tt.req, agentPid)
			if tt.refused == "" {
				if d != nil {
					t.Fatalf("refused: %s", d.Reason)
				}
				return
			}
			if d == nil || d.Code != CodeRefWrite || d.Validation != policy.ValidationFail || !strings.Contains(d.Reason, tt.refused) {
				t.Fatalf("decision %+v, want %s naming %q", d, CodeRefWrite, tt.refused)
			}
			if after != nil {
				t.Error("a refusal comes with something to run after the change")
			}
		})
	}
}

// TestWatchGitJudgesABranchMove: a branch moving to a commit made in the
// mount is checked against the ledger; one made elsewhere is not judged;
// an accepted commit gets a commit record once the move is made, and is
// not judged again.
func TestWatchGitJudgesABranchMove(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		// inMount: the commit's objects were written through the mount by
		// pid (0: not through the mount).
		inMount uint32
		// recorded are the ledger's writes (path → content) under INT-001.
		recorded map[string]string
		// refused is part of the refusal's reason, "" when allowed.
		refused string
		// commitRecord: once made, the move records the commit.
		commitRecord bool
	}{
		{name: "made elsewhere, not judged", files: map[string]string{"README.md": "pwned\n"}},
		{name: "received by git from a remote", files: map[string]string{"README.md": "pwned\n"}, inMount: receiverPid},
		{name: "made in the mount, unrecorded", files: map[string]string{"src/b.go": "package a\n"}, inMount: agentPid,
			refused: "src/b.go"},
		{name: "made in the mount, outside the scope", files: map[string]string{"README.md": "pwned\n"}, inMount: agentPid,
			recorded: map[string]string{"README.md": "pwned\n"}, refused: "README.md (outside the scope of INT-001)"},
		{name: "made in the mount by a git the agent wrote", files: map[string]string{"src/b.go": "package a\n"}, inMount: forgedPid,
			refused: "src/b.go"},
		{name: "made in the mount, recorded", files: map[string]string{"src/b.go": "package b\n"}, inMount: agentPid,
			recorded: map[string]string{"src/b.go": "package b\n"}, commitRecord: true},
		{name: "made in the mount, recorded with other content", files: map[string]string{"src/b.go": "package b\n"}, inMount: agentPid,
			recorded: map[string]string{"src/b.go": "package c\n"}, refused: "src/b.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newGateFixture(t)
			for p, c := range tt.recorded {
				f.records = append(f.records, f.record(p, c, "INT-001"))
			}
			x := f.craft(f.base, tt.files)
			if tt.inMount != 0 {
				f.writtenInMount(x, f.base, tt.inMount)
			}
			d, after := f.moveBranch(x)
			if len(f.judged) != 1 || strings.TrimSpace(string(f.judged[0])) != x {
				t.Errorf("judged from %q, want the .lock's %s", f.judged, x)
			}
			if tt.refused != "" {
				if d == nil || d.Code != CodeCommitRefused || !strings.Contains(d.Reason, tt.refused) || !strings.Contains(d.Reason, x[:12]) {
					t.Fatalf("decision %+v, want %s naming %s and %q", d, CodeCommitRefused, x[:12], tt.refused)
				}
				if after != nil {
					t.Error("a refusal comes with something to run after the change")
				}
				return
			}
			if d != nil || after == nil {
				t.Fatalf("decision %+v, after %v; want allowed, with the commits to record", d, after != nil)
			}
			after()
			if !tt.commitRecord {
				if len(f.recorded) != 0 || len(f.committed) != 0 {
					t.Fatalf("a commit not made in the mount was recorded: %+v %v", f.recorded, f.committed)
				}
				return
			}
			if len(f.recorded) != 1 {
				t.Fatalf("recorded %+v, want one commit record", f.recorded)
			}
			c := f.recorded[0]
			if c.Event != ledger.EventCommit || c.Commit != x || c.Intent != "INT-001" || c.Path != ".git/refs/heads/main" ||
				len(c.Records) != 1 || c.Records[0] != f.records[0].ID || c.Process == nil || c.Process.Pid != agentPid {
				t.Fatalf("commit record %+v, want commit %s under INT-001 accounted for by %s", c, x, f.records[0].ID)
			}
			if len(f.committed) != 1 || f.committed[0] != ".git" {
				t.Fatalf("Committed ran for %v, want .git once", f.committed)
			}
			// Moving another branch to the same commit judges nothing new.
			f.recorded = nil
			if d, after := f.moveBranch(x); d != nil || after == nil {
				t.Fatalf("moving to the accepted commit again: %+v", d)
			} else if after(); len(f.recorded) != 0 {
				t.Fatalf("the accepted commit was recorded again: %+v", f.recorded)
			}
		})
	}
}

// TestWatchGitLaterRecordsCount: records written after the gate first
// read the ledger (Add) account for a commit as well as those it read.
func TestWatchGitLaterRecordsCount(t *testing.T) {
	f := newGateFixture(t)
	x := f.craft(f.base, map[string]string{"src/b.go": "package b\n"})
	f.writtenInMount(x, f.base, agentPid)
	// The first judgement reads the (empty) ledger and refuses.
	if d, _ := f.moveBranch(x); d == nil || d.Code != CodeCommitRefused {
		t.Fatalf("unrecorded: %+v", d)
	}
	f.gate.Add(f.record("src/b.go", "package b\n", "INT-001"))
	if d, after := f.moveBranch(x); d != nil || after == nil {
		t.Fatalf("recorded after the first judgement: %+v", d)
	}
}

// TestWatchGitRefValues: what a rename would make a ref hold is read and
// judged: HEAD may name a branch, and nothing else symbolic.
func TestWatchGitRefValues(t *testing.T) {
	f := newGateFixture(t)
	tests := []struct {
		name, ref, value string
		refused          string
	}{
		{"HEAD switches branch", "HEAD", "ref: refs/heads/topic", ""},
		{"HEAD names a tag", "HEAD", "ref: refs/tags/v1", "HEAD may name a branch"},
		{"a branch made symbolic", "refs/heads/main", "ref: refs/heads/other", "may not be a symbolic ref"},
		{"a branch holding garbage", "refs/heads/main", "not a commit", "would not hold a commit id"},
		{"HEAD detached at the base", "HEAD", f.base, ""},
		{"a branch at an unknown commit", "refs/heads/main", strings.Repeat("ab", 20), "could not be checked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lock := ".git/" + tt.ref + ".lock"
			gittest.Write(t, f.src, map[string]string{lock: tt.value + "\n"})
			d, _ := f.watch(policy.Request{Op: policy.OpRename, Path: lock, Path2: ".git/" + tt.ref, Intent: "INT-001"}, agentPid)
			if tt.refused == "" {
				if d != nil {
					t.Fatalf("refused: %s", d.Reason)
				}
				return
			}
			if d == nil || !strings.Contains(d.Reason, tt.refused) {
				t.Fatalf("decision %+v, want a refusal naming %q", d, tt.refused)
			}
		})
	}
}

// TestWatchGitPackedRefs: a branch that packed-refs moves is judged like
// a loose one, and removing a loose branch is judged by what packed-refs
// then makes it.
func TestWatchGitPackedRefs(t *testing.T) {
	f := newGateFixture(t)
	x := f.craft(f.base, map[string]string{"src/b.go": "package a\n"})
	f.writtenInMount(x, f.base, agentPid)
	const header = "# pack-refs with: peeled fully-peeled sorted \n"

	gittest.Write(t, f.src, map[string]string{".git/packed-refs.lock": header + x + " refs/heads/main\n"})
	d, _ := f.watch(policy.Request{Op: policy.OpRename, Path: ".git/packed-refs.lock", Path2: ".git/packed-refs", Intent: "INT-001"}, agentPid)
	if d == nil || d.Code != CodeCommitRefused || !strings.HasPrefix(d.Reason, "refs/heads/main would move") {
		t.Fatalf("packed-refs moving main to an unrecorded commit: %+v", d)
	}
	gittest.Write(t, f.src, map[string]string{".git/packed-refs.lock": header + f.base + " refs/heads/main\n"})
	if d, _ := f.watch(policy.Request{Op: policy.OpRename, Path: ".git/packed-refs.lock", Path2: ".git/packed-refs", Intent: "INT-001"}, agentPid); d != nil {
		t.Fatalf("packed-refs naming the base: %+v", d)
	}
	gittest.Write(t, f.src, map[string]string{".git/packed-refs.lock": "garbage\n"})
	if d, _ := f.watch(policy.Request{Op: policy.OpRename, Path: ".git/packed-refs.lock", Path2: ".git/packed-refs"}, agentPid); d == nil || !strings.Contains(d.Reason, "does not parse") {
		t.Fatalf("packed-refs that does not parse: %+v", d)
	}

	unlink := policy.Request{Op: policy.OpUnlink, Path: ".git/refs/heads/main", Intent: "INT-001"}
	gittest.Write(t, f.src, map[string]string{".git/packed-refs": header + x + " refs/heads/main\n"})
	if d, _ := f.watch(unlink, agentPid); d == nil || d.Code != CodeCommitRefused {
		t.Fatalf("removing main where packed-refs names an unrecorded commit: %+v", d)
	}
	gittest.Write(t, f.src, map[string]string{".git/packed-refs": header + x + " refs/heads/other\n"})
	if d, _ := f.watch(unlink, agentPid); d != nil {
		t.Fatalf("removing main where packed-refs has no main: %+v", d)
	}
	gittest.Write(t, f.src, map[string]string{".git/packed-refs": "garbage\n"})
	if d, _ := f.watch(unlink, agentPid); d == nil || !strings.Contains(d.Reason, "does not parse") {
		t.Fatalf("removing main where packed-refs does not parse: %+v", d)
	}
}

// TestWatchGitFetchedCommits: what git fetch from a configured remote
// writes into a remote-tracking ref is remembered as history that is not
// the mount's; a fetch from an unconfigured name, a commit made in the
// mount, or a git the agent wrote is not.
func TestWatchGitFetchedCommits(t *testing.T) {
	f := newGateFixture(t)
	gittest.Git(t, f.src, "remote", "add", "origin", "/srv/p.git")
	elsewhere := f.craft(f.base, map[string]string{"README.md": "theirs\n"})
	mine := f.craft(f.base, map[string]string{"src/b.go": "package b\n"})
	f.writtenInMount(mine, f.base, agentPid)
	fetch := func(pid uint32, value string) {
		t.Helper()
		gittest.Write(t, f.src, map[string]string{".git/refs/remotes/origin/main.lock": value + "\n"})
		if d, _ := f.watch(policy.Request{Op: policy.OpRename, Path: ".git/refs/remotes/origin/main.lock", Path2: ".git/refs/remotes/origin/main"}, pid); d != nil {
			t.Fatalf("a remote-tracking ref is not governed, but: %+v", d)
		}
	}
	fetch(agentPid, elsewhere) // not git fetch
	fetch(fetchPid, mine)      // made in the mount
	fetch(forgedPid, elsewhere)
	st := f.gate.repo(context.Background(), ".git")
	if got := st.knownTips(); len(got) != 1 || got[0] != f.base {
		t.Fatalf("known history %v, want only the start %s", got, f.base)
	}
	fetch(fetchPid, elsewhere)
	fetch(fetchPid, elsewhere)
	if got := st.knownTips(); len(got) != 2 || got[1] != elsewhere {
		t.Fatalf("known history %v, want the start and the fetched %s once", got, elsewhere)
	}
}

func TestFetchRemote(t *testing.T) {
	git := systemGit(t)
	tests := []struct {
		exe    string
		args   []string
		remote string
		ok     bool
	}{
		{git, []string{"git", "fetch"}, "origin", true},
		{git, []string{"git", "fetch", "--prune", "upstream"}, "upstream", true},
		{git, []string{"git", "fetch", "--", "origin"}, "origin", true},
		{git, []string{"git", "fetch", "/tmp/evil"}, "/tmp/evil", false},
		{git, []string{"git", "fetch", "https://example.com/p.git"}, "https://example.com/p.git", false},
		{git, []string{"git", "pull"}, "", false},
		{"/tmp/git", []string{"git", "fetch"}, "", false},
		{"git", []string{"git", "fetch"}, "", false},
	}
	for _, tt := range tests {
		remote, ok := fetchRemote(&ledger.Process{Exe: tt.exe, Cmdline: tt.args})
		if remote != tt.remote || ok != tt.ok {
			t.Errorf("fetchRemote(%s %q) = %q, %v; want %q, %v", tt.exe, tt.args, remote, ok, tt.remote, tt.ok)
		}
	}
	if _, ok := fetchRemote(nil); ok {
		t.Error("fetchRemote(nil) trusted")
	}
}

// TestRestored: content a trusted git writes is a restore when the
// ledger or a commit not made in the mount already had it, and new
// otherwise.
func TestRestored(t *testing.T) {
	f := newGateFixture(t)
	ctx := context.Background()
	git := &ledger.Process{Exe: systemGit(t), Cmdline: []string{"git", "checkout"}}
	mine := f.craft(f.base, map[string]string{"src/a.go": "package mine\n"})
	f.writtenInMount(mine, f.base, agentPid)
	rec := f.record("src/c.go", "package c\n", "INT-001")
	f.gate.Add(rec)
	tests := []struct {
		name, path, content string
		by                  *ledger.Process
		want                string
	}{
		{"a version the ledger recorded", "src/c.go", "package c\n", git, "record " + rec.ID},
		{"a committed version", "src/a.go", "package a\n", git, "commit " + f.base},
		{"new content", "src/a.go", "package new\n", git, ""},
		{"a version only a commit made in the mount holds", "src/a.go", "package mine\n", git, ""},
		{"written by a git the agent made", "src/a.go", "package a\n", &ledger.Process{Exe: filepath.Join(f.src, "git")}, ""},
		{"written by another program", "src/a.go", "package a\n", &ledger.Process{Exe: "/usr/bin/cp"}, ""},
		{"inside the git directory", ".git/description", "x\n", git, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gittest.Write(t, f.src, map[string]string{tt.path: tt.content})
			if got := f.gate.Restored(ctx, tt.path, gittest.Sha(tt.content), tt.by); got != tt.want {
				t.Fatalf("Restored(%s) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
	if got := f.gate.Restored(ctx, "src/a.go", "", git); got != "" {
		t.Errorf("Restored without a hash = %q", got)
	}
}
