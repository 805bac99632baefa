package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/internal/gitchange"
	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// waitFor polls cond until it holds, failing the test after 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestAgentFiles: the daemon writes its section of the agent's
// instruction file, records that write as its own, keeps the file out of
// git, and rewrites it when a lesson is learned.
func TestAgentFiles(t *testing.T) {
	src := t.TempDir()
	gittest.Init(t, src)
	d := openDaemonIn(t, src, testPolicy, Config{AgentFiles: "auto"})
	b, err := os.ReadFile(filepath.Join(src, "CLAUDE.md"))
	if err != nil || !strings.Contains(string(b), "intentfs") {
		t.Fatalf("CLAUDE.md (%v):\n%s", err, b)
	}
	if ex, err := os.ReadFile(filepath.Join(src, ".git/info/exclude")); err != nil || strings.Count(string(ex), "\n/CLAUDE.md\n") != 1 {
		t.Fatalf(".git/info/exclude (%v):\n%s", err, ex)
	}
	if err := d.Select("INT-001", human()); err != nil {
		t.Fatal(err)
	}
	if err := backendOf(d).Lesson("the api package has no globals", agentProcess()); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(src, "CLAUDE.md")); err != nil || !strings.Contains(string(b), "the api package has no globals") {
		t.Fatalf("CLAUDE.md after a lesson (%v):\n%s", err, b)
	}
	var events []string
	for _, r := range records(t, d) {
		if r.Path() == "CLAUDE.md" {
			g := r.Gov()
			if g.ScopeValidation != string(policy.ValidationExempt) || g.Process == nil || g.Process.Comm != "intentfs" {
				t.Errorf("record of CLAUDE.md: %+v", g)
			}
			events = append(events, string(g.Event)+"/"+string(g.MutationClass)+"/"+g.PreImage)
		}
	}
	if strings.Join(events, ",") != "create/FILE_CREATION/,write/DOCUMENTATION/stored" {
		t.Fatalf("records of CLAUDE.md: %v, want its creation and a write whose replaced version is kept", events)
	}
	if err := openDaemonAgentFiles(t, "../x"); err == nil {
		t.Fatal("an agent file outside the workspace root was accepted")
	}
}

// openDaemonAgentFiles sets up the agent files spec on a fresh daemon.
func openDaemonAgentFiles(t *testing.T, spec string) error {
	d := openDaemon(t, testPolicy)
	d.cfg.AgentFiles = spec
	return d.setupAgentFiles()
}

// TestWatchersSeeEvents: a watcher is shown changes, governance events
// and denials, with the process that caused them.
func TestWatchersSeeEvents(t *testing.T) {
	d := openDaemon(t, testPolicy)
	sub, cancel, err := d.gov.feed.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := d.Select("INT-001", human()); err != nil {
		t.Fatal(err)
	}
	d.gov.Record(ledger.Change{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", Process: agentProcess()})
	d.gov.Denied(policy.Request{Op: policy.OpUnlink, Path: "README.md", Intent: "INT-001"}, policy.Decision{Code: policy.CodeOutOfScope, Reason: "no"}, agentProcess(), nil)
	want := []string{"governance select  alice", "change write src/a.go sh", "denied denied README.md sh"}
	for i, w := range want {
		select {
		case ev := <-sub.C():
			comm := strings.TrimSuffix(strings.TrimPrefix(ev.Comm, "intentfs ("), ")")
			if got := string(ev.Kind) + " " + ev.Event + " " + ev.Path + " " + comm; got != w {
				t.Fatalf("event %d = %q, want %q", i, got, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d (%s) never came", i, w)
		}
	}
}

// TestRevert: a revert of an intent undoes its changes in the source and
// records each step.
func TestRevert(t *testing.T) {
	d := openDaemon(t, testPolicy)
	p := filepath.Join(d.Source(), "src/new.go")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.gov.Record(ledger.Change{Event: ledger.EventCreate, Path: "src/new.go", PostHash: hashOf([]byte("package x\n")), Intent: "INT-001",
		Validation: string(policy.ValidationPass)})
	if err := d.FlushLedger(); err != nil {
		t.Fatal(err)
	}
	plan, n, err := d.Revert(history.Request{Intent: "INT-001"}, human())
	if err != nil || n != 1 || len(plan.Steps) != 1 {
		t.Fatalf("revert: %d steps applied of %+v: %v", n, plan, err)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatalf("src/new.go after the revert of its creation: %v", err)
	}
	if rs := recordsOf(t, d, ledger.EventRevert); len(rs) != 1 || rs[0].Path() != "src/new.go" {
		t.Fatalf("revert records: %+v", rs)
	}
	if d.gov.LedgerErr() != nil {
		t.Fatalf("the ledger failed: %v", d.gov.LedgerErr())
	}
}

// TestCommitThroughTheGateGetsNotes: a commit made in the mount whose
// changes the ledger accounts for passes the gate, gets a commit record,
// and a moment later a git note with its records.
func TestCommitThroughTheGateGetsNotes(t *testing.T) {
	src := t.TempDir()
	gittest.Init(t, src)
	base := gittest.Commit(t, src, "base", map[string]string{"src/a.go": "package a\n"})
	d := openDaemonIn(t, src, testPolicy, Config{})
	me := &fuse.Caller{Owner: fuse.Owner{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, Pid: uint32(os.Getpid())}
	read := func(rel string, max int64) ([]byte, error) { return os.ReadFile(filepath.Join(src, rel)) }
	change := func(req policy.Request) (*policy.Decision, func()) {
		return d.git.WatchGit(context.Background(), gitchange.Change{Req: req, Caller: me, Read: read, Checkpoint: func() {}})
	}
	// The first change the mount sees in the repository.
	change(policy.Request{Op: policy.OpCreate, Path: ".git/index.lock"})
	d.gov.Record(ledger.Change{Event: ledger.EventWrite, Path: "src/a.go", PostHash: hashOf([]byte("package b\n")), Intent: "INT-001",
		Validation: string(policy.ValidationPass)})
	x := gittest.Commit(t, src, "work", map[string]string{"src/a.go": "package b\n"})
	gittest.Git(t, src, "update-ref", "refs/heads/main", base) // the commit is to move main through the mount
	for _, l := range strings.Split(gittest.Git(t, src, "rev-list", "--objects", x, "^"+base), "\n") {
		oid, _, _ := strings.Cut(l, " ")
		if dec, _ := change(policy.Request{Op: policy.OpRename, Path: ".git/objects/tmp", Path2: ".git/objects/" + oid[:2] + "/" + oid[2:]}); dec != nil {
			t.Fatalf("writing object %s: %+v", oid, dec)
		}
	}
	gittest.Write(t, src, map[string]string{".git/refs/heads/main.lock": x + "\n"})
	dec, after := change(policy.Request{Op: policy.OpRename, Path: ".git/refs/heads/main.lock", Path2: ".git/refs/heads/main", Intent: "INT-001"})
	if dec != nil || after == nil {
		t.Fatalf("moving main to the recorded commit: %+v", dec)
	}
	if err := os.Rename(filepath.Join(src, ".git/refs/heads/main.lock"), filepath.Join(src, ".git/refs/heads/main")); err != nil {
		t.Fatal(err)
	}
	after()
	if cs := recordsOf(t, d, ledger.EventCommit); len(cs) != 1 || cs[0].Gov().Commit != x {
		t.Fatalf("commit records: %+v", cs)
	}
	waitFor(t, "the note of "+x[:12], func() bool {
		out, err := gittest.GitErr(src, "notes", "--ref=intentfs", "show", x)
		return err == nil && strings.Contains(out, `"src/a.go"`)
	})
	// A file git writes from a commit the repository had is a restore.
	gittest.Write(t, src, map[string]string{"src/a.go": "package a\n"})
	d.gov.Record(ledger.Change{Event: ledger.EventWrite, Path: "src/a.go", PostHash: hashOf([]byte("package a\n")), Intent: "INT-001",
		Validation: string(policy.ValidationPass), Process: &ledger.Process{Exe: gitOnPath(t)}})
	rs := records(t, d)
	if g := rs[len(rs)-1].Gov(); g.RestoredFrom != "commit "+base {
		t.Fatalf("git's write of the base's src/a.go: restored_from %q, want commit %s", g.RestoredFrom, base)
	}
	// A refusal from the gate comes through the daemon unchanged.
	if dec, _ := change(policy.Request{Op: policy.OpLink, Path: "src/x", Path2: ".git/refs/heads/main"}); dec == nil {
		t.Fatal("a hard link to a branch was not refused")
	}
}

// gitOnPath is the git on PATH, which must be one the gate trusts as git.
func gitOnPath(t *testing.T) string {
	t.Helper()
	exe, err := exec.LookPath("git")
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil || !(&upstreamSource{}).TrustedGit(&ledger.Process{Exe: exe}) {
		t.Skipf("the git on PATH (%q, %v) is not a root-owned git, the only kind the gate trusts", exe, err)
	}
	return exe
}

// TestActorsOutsideSessions: with no agent session, every process works
// under the mount's intent, and there is nothing to end.
func TestActorsOutsideSessions(t *testing.T) {
	d := openDaemon(t, testPolicy)
	if err := d.Select("INT-001", human()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*fuse.Caller{nil, {Pid: uint32(os.Getpid())}, {Pid: 0}} {
		if a := d.gov.ActorOf(c); a.Intent != "INT-001" || a.Session != nil || a.Unplaced != nil {
			t.Errorf("ActorOf(%+v) = %+v", c, a)
		}
	}
	if backendOf(d).Active(agentProcess()) != "INT-001" || backendOf(d).SessionOf(agentProcess()) != "" || len(d.Sessions()) != 0 || d.EndSessions() != 0 {
		t.Errorf("outside sessions: active %q, session %q, %d sessions", backendOf(d).Active(agentProcess()), backendOf(d).SessionOf(agentProcess()), len(d.Sessions()))
	}
	if p := d.gov.Process(nil); p == nil || p.Pid != 0 {
		t.Errorf("Process(nil) = %+v", p)
	}
	if p := d.gov.Process(&fuse.Caller{Pid: uint32(os.Getpid())}); p == nil || p.Pid != uint32(os.Getpid()) || p.Exe == "" {
		t.Errorf("Process(self) = %+v", p)
	}
	if _, err := d.StartSession(agent.Spec{Pinned: true}, human()); err == nil {
		t.Error("a pinned session without an intent was started")
	}
	if _, err := d.StartSession(agent.Spec{Intent: "INT-003"}, human()); err == nil || !strings.Contains(err.Error(), "BLOCKED") {
		t.Errorf("a session on a blocked intent: %v", err)
	}
}

func TestSessionSummary(t *testing.T) {
	tests := []struct {
		spec agent.Spec
		want string
	}{
		{agent.Spec{User: "agent", Uid: 1000, RootPid: 7}, "agent session as agent (uid 1000), root pid 7, selects its own intent"},
		{agent.Spec{User: "agent", Uid: 1000, RootPid: 7, Pinned: true, Intent: "INT-001"}, "agent session as agent (uid 1000), root pid 7, pinned to INT-001"},
		{agent.Spec{User: "ci", Uid: 0, RootPid: 9, Check: true, Intent: "INT-002"}, "agent session as ci (uid 0), root pid 9, runs acceptance checks of INT-002"},
	}
	for _, tt := range tests {
		if got := sessionSummary(tt.spec); got != tt.want {
			t.Errorf("sessionSummary(%+v) = %q, want %q", tt.spec, got, tt.want)
		}
	}
}

// TestBackgroundLoops: the intent map is written on the tick, and the
// counts of repeated denials are recorded when their window ends; both
// stop with their context.
func TestBackgroundLoops(t *testing.T) {
	d := openDaemon(t, testPolicy)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { d.flushMapEvery(ctx, 10*time.Millisecond); done <- struct{}{} }()
	go func() { d.gov.summarizeDenialsEvery(ctx); done <- struct{}{} }()
	d.gov.Record(ledger.Change{Event: ledger.EventCreate, Path: "src/n.go", Intent: "INT-001", Validation: string(policy.ValidationPass)})
	waitFor(t, "intent_map.md", func() bool {
		b, err := os.ReadFile(filepath.Join(d.Source(), policy.OrchestrationDir, "intent_map.md"))
		return err == nil && strings.Contains(string(b), "src/n.go")
	})
	cancel()
	for range 2 {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a background loop did not stop with its context")
		}
	}
	stop := make(chan struct{})
	sctx := stopContext(stop)
	close(stop)
	waitFor(t, "the stop context to end", func() bool { return sctx.Err() != nil })
}

// TestProcessLimits: the daemon needs umask 0 and raises its descriptor
// limit to the hard one.
func TestProcessLimits(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	if err := checkUmask(); err == nil || !strings.Contains(err.Error(), "umask is 0022") {
		t.Fatalf("checkUmask with 022: %v", err)
	}
	SetProcessUmask()
	if err := checkUmask(); err != nil {
		t.Fatalf("checkUmask after SetProcessUmask: %v", err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	saved := lim
	lim.Cur = lim.Cur / 2
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved)
	raiseFileLimit(openDaemon(t, testPolicy).log)
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur != lim.Max {
		t.Fatalf("after raiseFileLimit: %+v, %v", lim, err)
	}
}
