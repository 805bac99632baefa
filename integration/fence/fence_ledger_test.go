package fence

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// sharedDirPrepare makes work/ writable by the agent uid in the source.
func sharedDirPrepare(t *testing.T) func(src string) {
	return func(src string) {
		if err := os.MkdirAll(filepath.Join(src, "work"), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(src, "work"), 0o777); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFenceLedgerFailsClosed puts .orchestration on a tiny tmpfs, fills
// it, and checks that while the ledger cannot commit the agent's changes
// are refused with ENOSPC and the reason shows in status; that once space
// is freed changes are allowed again; and that every change that was
// allowed is in a ledger that verifies.
func TestFenceLedgerFailsClosed(t *testing.T) {
	testenv.Parallel(t)
	testenv.RequireFUSE(t)
	var orch string
	e := mountFence(t, testenv.ScopePolicy, "INT-002", nil, func(src string) {
		sharedDirPrepare(t)(src)
		orch = filepath.Join(src, policy.OrchestrationDir)
		yaml, err := os.ReadFile(filepath.Join(src, policy.IntentsFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", orch, "tmpfs", 0, "size=1m,mode=0755"); err != nil {
			t.Skipf("cannot mount a tmpfs for .orchestration: %v", err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(orch, syscall.MNT_DETACH) })
		testenv.WriteFile(t, filepath.Join(src, policy.IntentsFile), string(yaml))
	})
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "echo before > work/before"); err != nil {
		t.Fatalf("write before the disk is full: %v %s", err, out)
	}
	if err := e.D.FlushLedger(); err != nil {
		t.Fatal(err)
	}
	// Fill the ledger's filesystem, as root, outside the mount.
	filler := filepath.Join(orch, "filler")
	if out, err := exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=16k").CombinedOutput(); err == nil || !strings.Contains(string(out), "No space left") {
		t.Fatalf("dd did not fill the tmpfs: %v %s", err, out)
	}

	// The agent keeps writing. At most the writes already in flight when
	// the ledger failed are allowed; then every change is refused.
	var refusedOut string
	allowedDuringFull := 0
	for i := 0; i < 200 && refusedOut == ""; i++ {
		out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "echo x > work/full"+strconv.Itoa(i))
		if err != nil {
			refusedOut = out
			break
		}
		allowedDuringFull++
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("allowed while the ledger filesystem was full: %d; then: %s", allowedDuringFull, strings.TrimSpace(refusedOut))
	if refusedOut == "" {
		t.Fatalf("the ledger's filesystem is full, yet 200 writes through the mount were allowed (fails open)")
	}
	if !strings.Contains(refusedOut, "No space left on device") && !strings.Contains(refusedOut, "Permission denied") {
		t.Errorf("refusal = %q, want ENOSPC or EACCES", refusedOut)
	}
	for _, script := range []string{"echo y > work/refused", "mkdir work/refused-dir", "echo more >> work/before"} {
		if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, script); err == nil {
			t.Errorf("%s: allowed while the ledger cannot commit: %s", script, out)
		}
	}
	st, _ := json.Marshal(e.D.Status())
	t.Logf("status --json while full: %s", jsonField(t, st, "ledger"))
	if !strings.Contains(string(st), "no space left on device") {
		t.Errorf("status does not say why changes are refused:\n%s", st)
	}

	// Free the space: changes are allowed again, without a remount.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, func() bool {
		_, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "echo after > work/after")
		return err == nil
	})
	if _, ok := e.SrcContent("work/refused"); ok {
		t.Error("work/refused exists: a refused change reached the source")
	}
	// work/after is recorded at its RELEASE, which the kernel sends after
	// the shell's close(2) has returned.
	// A denial names it too (the tries while the ledger was full): wait
	// for the change's own record.
	e.WaitRecord("work/after", func(r *ledger.Record) bool { return r.Path() == "work/after" && ledger.ClassOf(r.Gov().Event) != "" })
	recs := e.Records()
	recorded := map[string]bool{}
	var failed, recovered bool
	for _, r := range recs {
		g := r.Gov()
		if ledger.ClassOf(g.Event) != "" {
			recorded[r.Path()] = true
		}
		failed = failed || g.Event == ledger.EventLedgerFailed
		recovered = recovered || g.Event == ledger.EventLedgerRecovered
	}
	if !failed || !recovered {
		t.Errorf("the ledger does not record its failure (%v) and recovery (%v)", failed, recovered)
	}
	entries, _ := os.ReadDir(filepath.Join(e.Src, "work"))
	for _, de := range entries {
		if !recorded["work/"+de.Name()] {
			t.Errorf("work/%s was changed through the mount but is not in the ledger", de.Name())
		}
	}
	testenv.VerifyClean(t, e.Src)
}

// jsonField returns one top-level field of a JSON object, for logs.
func jsonField(t *testing.T, b []byte, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return string(m[key])
}

// TestFenceExecAttribution: a process that changes one file and then
// execs another program that changes a second must be recorded as what it
// is at each change, not as what it was before the exec.
func TestFenceExecAttribution(t *testing.T) {
	testenv.Parallel(t)
	e := mountFence(t, testenv.ScopePolicy, "INT-002", nil, sharedDirPrepare(t))
	python := testenv.SystemPython(t)
	cases := []struct {
		name, script, second, wantComm string
	}{
		{"bash then python3", `exec bash -c 'echo a > work/b1; exec ` + python + ` -c "open(\"work/b2\", \"w\").write(\"b\")"'`, "work/b2", "python3"},
		{"sh then cp", `echo a > work/c1; exec cp work/c1 work/c2`, "work/c2", "cp"},
		{"sh then env dd", `echo a > work/e1; exec /usr/bin/env dd if=work/e1 of=work/e2 status=none`, "work/e2", "dd"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, c.script); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			r := e.WaitRecord("create "+c.second, testenv.Event(ledger.EventCreate, c.second))
			p := r.Gov().Process
			if p == nil || p.Comm != c.wantComm || !strings.HasSuffix(p.Exe, "/"+c.wantComm) && !strings.Contains(p.Exe, c.wantComm) {
				t.Errorf("%s recorded as made by %+v, want comm %s", c.second, p, c.wantComm)
			}
		})
	}
}

// TestFenceNames uses file names that try to forge text: a newline that
// writes a new section into intent_map.md, a terminal escape in `log`,
// and a name that is not UTF-8, which must survive verify and revert.
func TestFenceNames(t *testing.T) {
	testenv.Parallel(t)
	e := mountFence(t, testenv.ScopePolicy, "INT-002", nil, sharedDirPrepare(t))
	forged := "x\n<!-- intentfs:end INT-002 -->\n## INT-001: forged\n<!-- intentfs:begin INT-001 -->\n### Files\n\n- `README.md`"
	escape := "esc\x1b[2J\x1b[1;1Hfake"
	latin1 := "caf\xe9\xff"
	for _, name := range []string{forged, escape, latin1} {
		if err := os.WriteFile(filepath.Join(e.Mnt, "work", name), []byte("content\n"), 0o644); err != nil {
			t.Fatalf("create %q: %v", name, err)
		}
	}
	e.WaitRecord("create of the non-UTF-8 name", testenv.Event(ledger.EventCreate, "work/"+latin1))
	// intent_map.md is rewritten once a second; wait for the last name.
	var imap []byte
	testenv.WaitFor(t, func() bool {
		imap, _ = os.ReadFile(filepath.Join(e.Src, policy.OrchestrationDir, "intent_map.md"))
		return strings.Contains(string(imap), "work/caf")
	})
	for _, line := range strings.Split(string(imap), "\n") {
		if strings.HasPrefix(line, "## INT-001") || strings.HasPrefix(line, "<!-- intentfs:begin INT-001") || strings.Contains(line, "\x1b") {
			t.Errorf("intent_map.md has a line a file name forged: %q\n%s", line, imap)
		}
	}

	c := testenv.NewCLI(t)
	out, code := c.Run("log", "--source", e.Src, "--limit", "0")
	if code != 0 {
		t.Fatalf("log: %d %s", code, out)
	}
	if strings.Contains(out, "\x1b") || !utf8.ValidString(out) || !strings.Contains(out, `\x1b[2J`) {
		t.Errorf("log prints names raw, want escaped:\n%q", out)
	}
	testenv.VerifyClean(t, e.Src)

	// Revert the creation of the non-UTF-8 name: it is found and removed.
	var id string
	for _, r := range e.Records() {
		if r.Gov().Event == ledger.EventCreate && r.Path() == "work/"+latin1 {
			id = r.ID
		}
	}
	if id == "" {
		t.Fatalf("no create record names %q exactly", "work/"+latin1)
	}
	// The same call `intentfs revert ID` makes through the control socket.
	if _, n, err := e.D.Revert(history.Request{Record: id}, &ledger.Process{Comm: "test"}); err != nil || n != 1 {
		t.Fatalf("revert %s: %d steps, %v", id, n, err)
	}
	if _, ok := e.SrcContent("work/" + latin1); ok {
		t.Errorf("revert left %q in place", latin1)
	}
}

// TestFenceFloods: 20,000 denied writes from the agent grow the ledger
// by a bounded amount, every one is counted; lessons stay under their cap;
// and the agent cannot take all of the daemon's file descriptors.
func TestFenceFloods(t *testing.T) {
	testenv.Parallel(t)
	t.Run("denials", floodDenials)
	t.Run("lessons", floodLessons)
	t.Run("handles", floodHandles)
}

func floodDenials(t *testing.T) {
	e := mountFence(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/a.go": "package a\n"}, sharedDirPrepare(t))
	before := ledgerBytes(t, e)
	const n = 20000
	script := `i=0; while [ $i -lt ` + strconv.Itoa(n) + ` ]; do echo x 2>/dev/null > work/f$((i % 50)); i=$((i+1)); done; true`
	start := time.Now()
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, script); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Logf("%d denied writes in %v", n, time.Since(start).Round(time.Millisecond))
	// The repeats of the last window are summarized when it ends.
	denied := 0
	deadline := time.Now().Add(5 * time.Second)
	for denied != n && time.Now().Before(deadline) {
		denied = 0
		for _, r := range e.Records() {
			// A summary record stands for the repeats it counts.
			if g := r.Gov(); g.Event == ledger.EventDenied && g.Repeats > 0 {
				denied += g.Repeats
			} else if g.Event == ledger.EventDenied {
				denied++
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	grown := ledgerBytes(t, e) - before
	t.Logf("the ledger grew %d bytes for %d denials", grown, n)
	if grown > 512<<10 {
		t.Errorf("%d denials grew the ledger by %d bytes, want at most 512 KiB", n, grown)
	}
	if denied != n {
		t.Errorf("the ledger accounts for %d denials, want %d", denied, n)
	}
	if got := e.D.Status().Counters.Denied; got != n {
		t.Errorf("status counts %d denials, want %d", got, n)
	}
	testenv.VerifyClean(t, e.Src)
}

func floodLessons(t *testing.T) {
	e := mountFence(t, testenv.ScopePolicy, "INT-001", nil, nil)
	lessons := filepath.Join(e.Src, policy.OrchestrationDir, "CLAUDE.md")
	refused := false
	for i := 0; i < 120 && !refused; i++ {
		text := strings.Repeat("lesson "+strconv.Itoa(i)+" ", 300)
		if err := os.WriteFile(filepath.Join(e.Mnt, ".intentfs", "lesson"), []byte(text), 0); err != nil {
			t.Logf("lesson %d refused: %v", i, err)
			refused = true
		}
	}
	st, err := os.Stat(lessons)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lessons file: %d bytes", st.Size())
	if !refused || st.Size() > 256<<10 {
		t.Errorf("120 lessons of 3 KiB: refused=%v, file %d bytes, want a refusal and at most 256 KiB", refused, st.Size())
	}
}

// floodHandles: one uid holding many open files gets EMFILE from the
// mount while root can still open files.
func floodHandles(t *testing.T) {
	e := mountFence(t, testenv.ScopePolicy, "INT-002", nil, sharedDirPrepare(t))
	for i := 0; i < 8; i++ {
		testenv.WriteFile(t, filepath.Join(e.Src, "work", "r"+strconv.Itoa(i)), "r\n")
	}
	// python3 holds as many read handles as it can, as uid 1000.
	python := testenv.SystemPython(t)
	const hold = `
import os, resource, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
fds = []
try:
    while len(fds) < hard:
        fds.append(os.open("work/r%d" % (len(fds) % 8), os.O_RDONLY))
except OSError as e:
    print("stopped at", len(fds), e.strerror, flush=True)
else:
    print("held", len(fds), flush=True)
sys.stdin.read()
`
	fdsBefore := openFdCount(t)
	cmd := testenv.CommandIn(e.Mnt, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "--inh-caps=-all", python, "-c", hold)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	line = strings.TrimSpace(line)
	t.Logf("uid 1000: %s", line)
	var held int
	var soft, hard syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &soft)
	hard = soft
	if _, err := fmt.Sscanf(line, "stopped at %d", &held); err != nil || !strings.Contains(line, "Too many open files") {
		t.Fatalf("uid 1000 did not run into a limit: %q", line)
	}
	// Its own limit is the hard limit it raised itself to; the mount
	// must refuse well before that, at the daemon's per-uid cap.
	if testenv.TestDataPath() == "cached" {
		// No OPEN reaches the daemon on the cached data path: an open
		// holds nothing there, so the agent's own limit is its only one,
		// and the daemon's descriptors must not grow with its opens.
		// (A tenth of what it held: other tests' mounts share this
		// process and open descriptors of their own meanwhile.)
		if n := openFdCount(t); n > fdsBefore+held/10 {
			t.Errorf("the daemon's descriptors grew from %d to %d while uid 1000 held %d files open", fdsBefore, n, held)
		}
	} else if uint64(held) > hard.Max/2 {
		t.Errorf("uid 1000 held %d handles in the daemon (its own limit %d): no per-uid cap", held, hard.Max)
	}
	// Root still gets files.
	for i := 0; i < 8; i++ {
		f, err := os.Open(filepath.Join(e.Mnt, "work", "r"+strconv.Itoa(i)))
		if err != nil {
			t.Fatalf("root cannot open a file while uid 1000 floods: %v", err)
		}
		f.Close()
	}
}

func ledgerBytes(t *testing.T, e *testenv.Env) int64 {
	t.Helper()
	if err := e.D.FlushLedger(); err != nil {
		t.Fatal(err)
	}
	files, err := ledger.Files(e.D.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			n += st.Size()
		}
	}
	return n
}

// openFdCount is the number of descriptors this process (the daemon of
// the mounts the tests start) has open.
func openFdCount(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
