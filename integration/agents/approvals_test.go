package agents

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// approvalPolicy holds mass deletions: INT-001's for two minutes, INT-002's
// for two seconds (the timeout case).
const approvalPolicy = `# approvals for the test
active_intents:
  - id: INT-001
    name: slow decisions
    status: IN_PROGRESS
    owned_scope: ["**"]
    approvals:
      - name: mass-delete
        ops: [delete]
        more_than: 20
        within: 10s
        timeout: 2m
  - id: INT-002
    name: quick timeout
    status: IN_PROGRESS
    owned_scope: ["**"]
    approvals:
      - name: mass-delete-quick
        ops: [delete]
        more_than: 20
        within: 10s
        timeout: 2s
`

// seedFiles writes n small files into dir.
func seedFiles(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		testenv.WriteFile(t, filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), "data\n")
	}
}

// countFiles counts the entries of dir, -1 if it is gone.
func countFiles(dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	return len(ents)
}

// startIn starts name args in dir, with its output collected.
func startIn(t *testing.T, dir string, name string, args ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// waitExit waits for cmd, at most a minute.
func waitExit(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("%v did not finish", cmd.Args)
		return nil
	}
}

// TestApprovalRmRf is the story of the README: an rm -rf held at its
// 21st deletion, approved; another denied; a third timed out.
func TestApprovalRmRf(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, approvalPolicy)
	for _, d := range []string{"bulk1", "bulk2", "bulk3"} {
		seedFiles(t, filepath.Join(repo, d), 100)
	}
	testenv.WriteFile(t, filepath.Join(repo, "elsewhere/keep.txt"), "kept\n")
	c.Must("mount", "./repo", ws)
	t.Cleanup(func() { c.Run("unmount", ws); syscall.Unmount(ws, syscall.MNT_DETACH) })
	c.Must("select", "INT-001", "--mount", ws)

	// Approved: held at the 21st deletion, then the rest of the burst.
	rm, rmOut := startIn(t, ws, "rm", "-rf", "bulk1")
	p := c.WaitPending(ws)
	if p.Op != "unlink" || !strings.HasPrefix(p.Path, "bulk1/") || p.Rule != "mass-delete" || p.Intent != "INT-001" || p.Process == nil || p.Process.Pid != uint32(rm.Process.Pid) {
		t.Fatalf("pending %+v", p)
	}
	if n := countFiles(filepath.Join(repo, "bulk1")); n != 80 {
		t.Fatalf("the hold came after %d deletions, want 20", 100-n)
	}
	// Nothing else waits behind the held request.
	other, err := exec.Command("timeout", "10", "sh", "-c", "cd "+ws+" && cat elsewhere/keep.txt && echo new > elsewhere/new.txt && cat elsewhere/new.txt").CombinedOutput()
	if err != nil || string(other) != "kept\nnew\n" {
		t.Fatalf("reads and writes elsewhere while a change is held: %v %q", err, other)
	}
	if st := c.Must("status", "--mount", ws); !strings.Contains(st, "waiting:    1 for a human") {
		t.Fatalf("status does not say a change waits:\n%s", st)
	}
	listed := c.Must("approvals", "--mount", ws)
	if !strings.Contains(listed, fmt.Sprint(p.ID)) || !strings.Contains(listed, p.Path) || !strings.Contains(listed, "mass-delete") {
		t.Fatalf("approvals:\n%s", listed)
	}
	approved := c.Must("approve", fmt.Sprint(p.ID), "--for", "60s", "--mount", ws)
	if !strings.Contains(approved, fmt.Sprintf("%d approved by root (uid 0): unlink %s", p.ID, p.Path)) || !strings.Contains(approved, "for 1m0s") {
		t.Fatalf("approve printed %q", approved)
	}
	if err := waitExit(t, rm); err != nil {
		t.Fatalf("rm -rf after approval: %v\n%s", err, rmOut)
	}
	if n := countFiles(filepath.Join(repo, "bulk1")); n != -1 {
		t.Fatalf("bulk1 still has %d entries", n)
	}
	t.Logf("approvals printed:\n%s\napprove printed:\n%s", listed, approved)

	// Denied: the held file and every one after it stay in the source.
	rm, rmOut = startIn(t, ws, "rm", "-rf", "bulk2")
	p = c.WaitPending(ws)
	left := countFiles(filepath.Join(repo, "bulk2"))
	denied := c.Must("deny", fmt.Sprint(p.ID), "--reason", "keep the fixtures", "--mount", ws)
	if !strings.Contains(denied, fmt.Sprintf("%d denied by root (uid 0): unlink %s", p.ID, p.Path)) || !strings.Contains(denied, "keep the fixtures") {
		t.Fatalf("deny printed %q", denied)
	}
	if err := waitExit(t, rm); err == nil || !strings.Contains(rmOut.String(), "Permission denied") {
		t.Fatalf("rm -rf after deny: %v\n%s", err, rmOut)
	}
	if n := countFiles(filepath.Join(repo, "bulk2")); n != left || left < 1 {
		t.Fatalf("bulk2 had %d files at the hold, %d after the denial", left, n)
	}
	if _, err := os.Stat(filepath.Join(repo, "bulk2", filepath.Base(p.Path))); err != nil {
		t.Fatalf("the denied file is gone from the source: %v", err)
	}
	t.Logf("deny printed:\n%s\nrm printed (first lines):\n%s", denied, firstLines(rmOut.String(), 3))

	// Timed out: INT-002's rule waits two seconds.
	c.Must("select", "INT-002", "--mount", ws)
	rm, rmOut = startIn(t, ws, "rm", "-rf", "bulk3")
	p = c.WaitPending(ws)
	if p.Rule != "mass-delete-quick" {
		t.Fatalf("pending %+v", p)
	}
	if err := waitExit(t, rm); err == nil || !strings.Contains(rmOut.String(), "Permission denied") {
		t.Fatalf("rm -rf after the timeout: %v\n%s", err, rmOut)
	}
	if n := countFiles(filepath.Join(repo, "bulk3")); n != 80 {
		t.Fatalf("bulk3 has %d files after the timeout, want 80", n)
	}
	denials := c.Must("log", "--json", "--event", "denied", "--limit", "0", "--mount", ws)
	if !strings.Contains(denials, string(approvals.CodeTimedOut)) || !strings.Contains(denials, "nobody decided within 2s") {
		t.Fatalf("the ledger's denials lack the timeout's reason:\n%s", denials)
	}
	t.Logf("rm printed after the timeout (first lines):\n%s", firstLines(rmOut.String(), 3))

	// The ledger names who decided each.
	c.Must("unmount", ws)
	verdicts := map[string]string{}
	err = ledger.Scan(filepath.Join(repo, ".orchestration", "agent_trace.jsonl"), func(_ int, r *ledger.Record) error {
		g := r.Gov()
		if g.Event == ledger.EventApproval && strings.Contains(g.Reason, "rule mass-delete") {
			by := "intentfs"
			if g.Process != nil {
				by = fmt.Sprintf("uid %d", g.Process.Uid)
			}
			verdicts[g.Code] = by + ": " + g.Reason
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for code, by := range map[string]string{"APPROVED": "uid 0: ", "DENIED": "uid 0: ", "TIMED_OUT": "intentfs: "} {
		if !strings.HasPrefix(verdicts[code], by) {
			t.Errorf("ledger %s record: %q", code, verdicts[code])
		}
	}
	if !strings.Contains(verdicts["APPROVED"], "covering the rule's changes by that process for 1m0s") || !strings.Contains(verdicts["DENIED"], "keep the fixtures") {
		t.Errorf("ledger reasons: %v", verdicts)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// TestApprovalKilledHolderLeavesNothing: kill -9 of a held process ends
// its wait; the pending entry goes, and the ledger says why.
func TestApprovalKilledHolderLeavesNothing(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, approvalPolicy)
	seedFiles(t, filepath.Join(repo, "bulk"), 40)
	c.Must("mount", "./repo", ws, "--intent", "INT-001")
	t.Cleanup(func() { c.Run("unmount", ws); syscall.Unmount(ws, syscall.MNT_DETACH) })
	rm, _ := startIn(t, ws, "rm", "-rf", "bulk")
	p := c.WaitPending(ws)
	if err := rm.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(t, rm); err == nil {
		t.Fatal("the killed rm exited 0")
	}
	testenv.WaitFor(t, func() bool { return len(c.PendingOf(ws)) == 0 }, "the pending entry to go")
	if n := countFiles(filepath.Join(repo, "bulk")); n != 20 {
		t.Fatalf("bulk has %d files, want the 20 after the hold", n)
	}
	if out, code := c.Run("approve", fmt.Sprint(p.ID), "--mount", ws); code != 1 || !strings.Contains(out, "not pending") {
		t.Fatalf("approving the cancelled entry: exit %d %q", code, out)
	}
	out := c.Must("log", "--json", "--event", "approval", "--mount", ws)
	if !strings.Contains(out, `"code":"CANCELLED"`) {
		t.Fatalf("no CANCELLED record:\n%s", out)
	}
}

// TestApprovalKilledAgentEndsItsHold: an agent's (uid 1000) rm held by
// a rule and killed with SIGKILL is gone within seconds on either
// transport (INTENTFS_TRANSPORT=dev or uring), its hold is recorded as
// CANCELLED, and nothing is left waiting: neither the hold nor a new one
// for a request the kernel delivered after the kill.
func TestApprovalKilledAgentEndsItsHold(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, approvalPolicy)
	seedFiles(t, filepath.Join(repo, "bulk"), 40)
	if err := filepath.Walk(repo, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 1000, 1000)
	}); err != nil {
		t.Fatal(err)
	}
	c.Must("mount", "./repo", ws, "--intent", "INT-001")
	t.Cleanup(func() { c.Run("unmount", ws); syscall.Unmount(ws, syscall.MNT_DETACH) })
	rm, _ := startIn(t, ws, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "rm", "-rf", "bulk")
	c.WaitPending(ws)
	killed := time.Now()
	if err := rm.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- rm.Wait() }()
	select {
	case err := <-exited:
		if err == nil {
			t.Fatal("the killed rm exited 0")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the killed rm is still there %s after SIGKILL (pending: %+v)", time.Since(killed).Round(time.Second), c.PendingOf(ws))
	}
	testenv.WaitFor(t, func() bool { return len(c.PendingOf(ws)) == 0 }, "the pending entry to go")
	// Nothing comes back: a request delivered late would be held anew.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if p := c.PendingOf(ws); len(p) != 0 {
			t.Fatalf("a new hold after the kill: %+v", p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out := c.Must("log", "--json", "--event", "approval", "--mount", ws)
	if n := strings.Count(out, `"code":"CANCELLED"`); n != 1 {
		t.Fatalf("%d CANCELLED records, want 1:\n%s", n, out)
	}
	if n := countFiles(filepath.Join(repo, "bulk")); n != 20 {
		t.Fatalf("bulk has %d files, want the 20 before the hold", n)
	}
}

// TestApprovalScopeRequest: an agent asks for scope, a human approves,
// the policy changes only in that intent's scope (and version) and the
// new scope takes effect.
func TestApprovalScopeRequest(t *testing.T) {
	testenv.Parallel(t)
	const pol = "# keep this comment\nactive_intents:\n  - id: INT-001\n    name: api work   # trailing comment\n    status: IN_PROGRESS\n    owned_scope: [\"src/**\"]\n"
	e := testenv.Mount(t, pol, "INT-001", map[string]string{"src/a.go": "package a\n"})
	e.MustDeny("echo x > docs.md")
	out, err := e.ShAs(1000, 1000, `printf 'paths: docs.md notes/**\nwhy: the API needs its page\n' > .intentfs/request && cat .intentfs/pending`)
	if err != nil || !strings.Contains(out, "scope_request intent=INT-001 paths=docs.md,notes/**") || !strings.Contains(out, "the API needs its page") {
		t.Fatalf("request: %v\n%s", err, out)
	}
	if out, err := e.Sh(`printf 'paths: ../etc\nwhy: x\n' > .intentfs/request`); err == nil {
		t.Fatalf("a request for a path outside the workspace was accepted: %s", out)
	}
	pending, _ := e.D.Approvals()
	if len(pending) != 1 || pending[0].Kind != approvals.KindScopeRequest || pending[0].Process == nil || pending[0].Process.Uid != 1000 {
		t.Fatalf("pending %+v", pending)
	}
	before, _ := os.ReadFile(filepath.Join(e.Src, policy.IntentsFile))
	ds, err := e.D.DecideApproval(control.DecideRequest{ID: pending[0].ID, Verdict: approvals.VerdictApproved}, &ledger.Process{Pid: 1, Comm: "intentfs (alice)"})
	if err != nil || len(ds) != 1 || ds[0].By != "alice (uid 0)" {
		t.Fatalf("decide: %v %+v", err, ds)
	}
	after, _ := os.ReadFile(filepath.Join(e.Src, policy.IntentsFile))
	// Byte for byte the same, but for the scope and the bookkeeping a
	// scope change always adds (version, updated_at).
	want := strings.Replace(string(before), `owned_scope: ["src/**"]`, `owned_scope: ["src/**", "docs.md", "notes/**"]`, 1)
	var kept []string
	for _, line := range strings.SplitAfter(string(after), "\n") {
		if line != "    version: 2\n" && !strings.HasPrefix(line, "    updated_at: ") {
			kept = append(kept, line)
		}
	}
	if got := strings.Join(kept, ""); got != want || !strings.Contains(string(after), "    version: 2\n") {
		t.Fatalf("policy after the approval:\n%s\nwant, but for version and updated_at:\n%s", after, want)
	}
	testenv.WaitFor(t, func() bool { _, err := e.Sh("echo x > docs.md"); return err == nil }, "the new scope to take effect")
	var scoped, approved bool
	for _, r := range e.Records() {
		g := r.Gov()
		scoped = scoped || (g.Event == ledger.EventScope && strings.Contains(g.Reason, "added docs.md, notes/**"))
		approved = approved || (g.Event == ledger.EventApproval && g.Code == "APPROVED" && strings.Contains(g.Reason, "approved by alice (uid 0)"))
	}
	if !scoped || !approved {
		t.Fatalf("ledger: scope record %v, approval record %v", scoped, approved)
	}
}

// TestApprovalFloodFailsClosed: a uid may keep only so many changes
// waiting; past that, its changes are refused at once, not held, and
// the mount serves everyone else.
func TestApprovalFloodFailsClosed(t *testing.T) {
	testenv.Parallel(t)
	const pol = "approvals:\n  - name: every-chmod\n    ops: [chmod]\n    timeout: 1m\nactive_intents:\n  - id: INT-001\n    name: all of it\n    status: IN_PROGRESS\n    owned_scope: [\"**\"]\n"
	seed := map[string]string{}
	n := approvals.DefaultMaxPendingPerUID + 4
	for i := range n {
		seed[fmt.Sprintf("d/f%02d", i)] = "x\n"
	}
	e := testenv.MountPrepared(t, pol, "INT-001", seed, func(src string) {
		if out, err := exec.Command("chown", "-R", "1000:1000", filepath.Join(src, "d")).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
	})
	var wg sync.WaitGroup
	results := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _ := e.ShAs(1000, 1000, fmt.Sprintf("chmod 600 d/f%02d 2>&1 || true", i))
			results[i] = out
		}()
	}
	testenv.WaitFor(t, func() bool { p, _ := e.D.Approvals(); return len(p) == approvals.DefaultMaxPendingPerUID }, "the uid's holds to fill")
	// The rest were refused at once, with a reason.
	testenv.WaitFor(t, func() bool {
		st := e.D.Status()
		refused := 0
		for _, dn := range st.RecentDenials {
			if dn.Code == string(approvals.CodeQueueFull) {
				refused++
			}
		}
		return refused == n-approvals.DefaultMaxPendingPerUID
	}, "the extra holds to be refused")
	if out := e.MustSh("cat d/f00 && echo ok > other.txt && cat other.txt"); out != "x\nok\n" {
		t.Fatalf("the mount does not serve others: %q", out)
	}
	pending, _ := e.D.Approvals()
	for _, p := range pending {
		if _, err := e.D.DecideApproval(control.DecideRequest{ID: p.ID, Verdict: approvals.VerdictDenied}, &ledger.Process{Comm: "intentfs (root)"}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	denied := 0
	for _, r := range results {
		if strings.Contains(r, "Permission denied") {
			denied++
		}
	}
	if denied != n {
		t.Fatalf("%d of %d chmods were refused: %q", denied, n, results)
	}
}

// TestWatchJSONUnderLoad: a watcher reading JSON lines sees every change
// of an untar of thousands of files, and is told of nothing dropped.
func TestWatchJSONUnderLoad(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-002", nil)
	const files = 3000
	stage := t.TempDir()
	for i := range files {
		testenv.WriteFile(t, filepath.Join(stage, "tree", fmt.Sprintf("d%02d", i/100), fmt.Sprintf("f%04d.txt", i)), "x\n")
	}
	tarball := filepath.Join(t.TempDir(), "tree.tar")
	if out, err := exec.Command("tar", "-C", stage, "-cf", tarball, "tree").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	created, dropped, started := 0, uint64(0), false
	done := make(chan error, 1)
	go func() {
		done <- control.Watch(ctx, e.D.SocketPath(), control.Request{}, func(ev control.Event) error {
			mu.Lock()
			defer mu.Unlock()
			started = true
			switch {
			case ev.Kind == control.EventChange && ev.Event == string(ledger.EventCreate) && strings.HasPrefix(ev.Path, "tree/"):
				created++
			case ev.Kind == control.EventDropped:
				dropped += ev.Dropped
			}
			return nil
		})
	}()
	testenv.WaitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return started }, "the watch to start")
	e.MustSh("tar -xf " + tarball)
	testenv.WaitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return created == files || dropped > 0 }, "every create to reach the watcher")
	mu.Lock()
	defer mu.Unlock()
	if created != files || dropped != 0 {
		t.Fatalf("the watcher saw %d of %d creates, %d dropped", created, files, dropped)
	}
}

// TestScopeRequestFromBash: bash's printf writes each line on its own, so
// the guide's request arrives in two write(2)s; it is taken whole, and a
// request left without its why: line fails at close and is recorded.
func TestScopeRequestFromBash(t *testing.T) {
	testenv.Parallel(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	e := testenv.Mount(t, "active_intents:\n  - id: INT-001\n    name: api\n    status: IN_PROGRESS\n    owned_scope: [\"src/**\"]\n", "INT-001", map[string]string{"src/a.go": "package a\n"})
	out, err := testenv.CommandIn(e.Mnt, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "bash", "-c",
		`printf 'paths: docs/** src/cache.go\nwhy: the cache needs a page\n' > .intentfs/request && cat .intentfs/pending`).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "scope_request intent=INT-001 paths=docs/**,src/cache.go") {
		t.Fatalf("bash's request: %v\n%s", err, out)
	}
	out, err = testenv.CommandIn(e.Mnt, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "bash", "-c",
		`exec 3>.intentfs/request && printf 'paths: docs/**\n' >&3 && exec 3>&-; echo closed=$?`).CombinedOutput()
	t.Logf("incomplete request: %v\n%s", err, out)
	if pending, _ := e.D.Approvals(); len(pending) != 1 {
		t.Fatalf("an incomplete request was filed: %+v", pending)
	}
	// Refused at close; on the cached data path, where no FLUSH comes,
	// once the writes have paused.
	testenv.WaitFor(t, func() bool {
		den, _ := os.ReadFile(filepath.Join(e.Mnt, ".intentfs", "denials"))
		return strings.Contains(string(den), "no `why:` line")
	}, "the incomplete request to be refused and recorded")
	if pending, _ := e.D.Approvals(); len(pending) != 1 {
		t.Fatalf("an incomplete request was filed: %+v", pending)
	}
}
