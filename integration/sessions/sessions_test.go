package sessions

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/ledger"
)

// bounded wraps a shell wait loop so a broken test fails instead of hanging.
const waitFile = `w() { i=0; while [ ! -e "$1" ]; do i=$((i+1)); [ $i -gt 400 ] && { echo "gave up waiting for $1"; exit 9; }; sleep 0.025; done; }; `

func TestSessionsTwoAgentsInParallel(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "")
	a := e.Session("--intent", "INT-001", "--name", "agent-a", "--model", "anthropic/claude-opus-4-5",
		"--conversation", "https://example.com/c/42", "--", "sh", "-c", waitFile+
			`echo > src/ready-a; w docs/ready-b; for i in 1 2 3 4 5 6 7 8; do echo $i > src/a$i.txt; done; if echo no > docs/from-a.md; then echo LEAK-A; fi`)
	b := e.Session("--intent", "INT-002", "--name", "agent-b", "--", "sh", "-c", waitFile+
		`echo > docs/ready-b; w src/ready-a; for i in 1 2 3 4 5 6 7 8; do echo $i > docs/b$i.md; done; if echo no > src/from-b.txt; then echo LEAK-B; fi`)
	var outA, outB bytes.Buffer
	a.Stdout, a.Stderr, b.Stdout, b.Stderr = &outA, &outA, &outB, &outB
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	errA, errB := a.Wait(), b.Wait()
	t.Logf("agent-a: %v\n%s\nagent-b: %v\n%s", errA, outA.String(), errB, outB.String())
	if strings.Contains(outA.String()+outB.String(), "LEAK") || strings.Contains(outA.String()+outB.String(), "gave up") {
		t.Fatalf("a session wrote outside its intent, or the two did not run together")
	}
	for _, p := range []string{"docs/from-a.md", "src/from-b.txt"} {
		if _, err := os.Stat(filepath.Join(e.Src, p)); err == nil {
			t.Errorf("%s exists in the source", p)
		}
	}
	sa, okA := e.SessionNamed("agent-a")
	sb, okB := e.SessionNamed("agent-b")
	if !okA || !okB || sa.ID == sb.ID {
		t.Fatalf("sessions listed: %+v", e.D.Sessions())
	}
	for i := 1; i <= 8; i++ {
		ra := e.WaitRecord("agent-a's create", testenv.Event(ledger.EventCreate, fmt.Sprintf("src/a%d.txt", i)))
		rb := e.WaitRecord("agent-b's create", testenv.Event(ledger.EventCreate, fmt.Sprintf("docs/b%d.md", i)))
		if g := ra.Gov(); g.Session == nil || g.Session.ID != sa.ID || ledger.Str(g.IntentID) != "INT-001" {
			t.Errorf("src/a%d.txt recorded with session %+v intent %s, want %s INT-001", i, g.Session, ledger.Str(g.IntentID), sa.ID)
		}
		if c := ra.Files[0].Conversations[0]; c.Contributor.ModelID != "anthropic/claude-opus-4-5" || c.URL != "https://example.com/c/42" {
			t.Errorf("src/a%d.txt's conversation: %+v", i, c)
		}
		if g := rb.Gov(); g.Session == nil || g.Session.ID != sb.ID || ledger.Str(g.IntentID) != "INT-002" {
			t.Errorf("docs/b%d.md recorded with session %+v intent %s, want %s INT-002", i, g.Session, ledger.Str(g.IntentID), sb.ID)
		}
	}
	deniedA := e.WaitRecord("agent-a's denial", testenv.Event(ledger.EventDenied, "docs/from-a.md"))
	if g := deniedA.Gov(); g.Session == nil || g.Session.ID != sa.ID {
		t.Errorf("agent-a's denial names session %+v", g.Session)
	}
	if sa.Changes == 0 || sa.Denials == 0 || sb.Changes == 0 || sb.Denials == 0 {
		t.Errorf("session counters: a %+v, b %+v", sa, sb)
	}
	// The CLI shows both, and log filters by session.
	out, err := e.CLI("sessions", "--mount", e.Mnt)
	if err != nil || !strings.Contains(out, "agent-a") || !strings.Contains(out, "agent-b") {
		t.Errorf("intentfs sessions: %v\n%s", err, out)
	}
	out, err = e.CLI("log", "--mount", e.Mnt, "--session", sa.ID, "--json", "--limit", "0")
	if err != nil || !strings.Contains(out, "src/a1.txt") || strings.Contains(out, "docs/b1.md") {
		t.Errorf("intentfs log --session %s: %v\n%s", sa.ID, err, out)
	}
}

func TestSessionPinnedCannotSelect(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "")
	out, code := e.RunSession("--intent", "INT-001", "--name", "pinned", "--", "sh", "-c",
		`/bin/echo INT-005 > .intentfs/active; echo "rc=$?"; cat .intentfs/active; cat .intentfs/denials; if echo x > README.md; then echo LEAK; fi`)
	t.Logf("%s", out)
	if code != 0 || !strings.Contains(out, "Operation not permitted") || !strings.Contains(out, "rc=1") || strings.Contains(out, "LEAK") {
		t.Fatalf("exit %d", code)
	}
	if !testenv.HasLine(out, "INT-001") || !strings.Contains(out, "SESSION_PINNED") {
		t.Errorf("the session's active intent or denials do not say it is pinned")
	}
	r := e.WaitRecord("the pinned select's denial", func(r *ledger.Record) bool { return r.Gov().Code == "SESSION_PINNED" })
	if r.Gov().Session == nil || r.Gov().Session.Name != "pinned" {
		t.Errorf("the denial names session %+v", r.Gov().Session)
	}
	if a := e.D.ActiveIntent(); a != "" {
		t.Errorf("the mount's intent changed to %q", a)
	}

	// A session that may select changes its own intent only.
	out, code = e.RunSession("--select", "--name", "chooser", "--", "sh", "-c",
		`echo INT-002 > .intentfs/active && cat .intentfs/active && echo d > docs/chosen.md && cat .intentfs/context | head -3`)
	t.Logf("%s", out)
	if code != 0 || !testenv.HasLine(out, "INT-002") {
		t.Fatalf("select in a session: exit %d", code)
	}
	if a := e.D.ActiveIntent(); a != "" {
		t.Errorf("a session's select changed the mount's intent to %q", a)
	}
	if r := e.WaitRecord("the chooser's create", testenv.Event(ledger.EventCreate, "docs/chosen.md")); ledger.Str(r.Gov().IntentID) != "INT-002" {
		t.Errorf("recorded under %s", ledger.Str(r.Gov().IntentID))
	}
}

func TestSessionClaimReleasedWhenHolderIsKilled(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "")
	holder := e.Session("--intent", "INT-001", "--name", "holder", "--", "sleep", "120")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- holder.Wait() }()
	var info agent.Info
	testenv.WaitFor(t, func() bool { var ok bool; info, ok = e.SessionNamed("holder"); return ok && info.Live }, "the holder's session")

	out, code := e.RunSession("--intent", "INT-001", "--name", "second", "--", "true")
	t.Logf("second claim: exit %d\n%s", code, out)
	if code != 125 || !strings.Contains(out, "held by session "+info.ID) || !strings.Contains(out, `"holder"`) ||
		!strings.Contains(out, fmt.Sprintf("pid %d", info.RootPid)) {
		t.Fatalf("a second claim of INT-001 was not refused with the holder's session, user and pid")
	}
	// A shared intent may be held by several.
	if out, code := e.RunSession("--intent", "INT-003", "--", "true"); code != 0 {
		t.Fatalf("a shared intent: exit %d\n%s", code, out)
	}

	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	testenv.WaitFor(t, func() bool { s, _ := e.SessionNamed("holder"); return !s.Live }, "the holder's session to end")
	e.WaitRecord("the holder's session_end", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventSessionEnd && r.Gov().Session != nil && r.Gov().Session.ID == info.ID
	})
	if out, code := e.RunSession("--intent", "INT-001", "--name", "third", "--", "sh", "-c", "echo mine > src/third.txt"); code != 0 {
		t.Fatalf("claiming INT-001 after the holder was killed: exit %d\n%s", code, out)
	}
	// The killed session's processes are gone with it (a zombie until
	// the host's init reaps it).
	testenv.WaitFor(t, func() bool { return syscall.Kill(info.RootPid, 0) != nil }, "the holder's root process to be gone")
}

func TestSessionStaleFileDeniedUntilReread(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "")
	reader := e.Session("--intent", "INT-003", "--name", "reader", "--", "sh", "-c", waitFile+
		`cat shared/doc.txt >/dev/null; echo > shared/reader-ready; w shared/writer-done;
		 if echo reader >> shared/doc.txt; then echo WROTE-STALE; else echo REFUSED; fi
		 cat shared/doc.txt >/dev/null; echo reader >> shared/doc.txt && echo WROTE-AFTER-READ`)
	var out bytes.Buffer
	reader.Stdout, reader.Stderr = &out, &out
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	wout, code := e.RunSession("--intent", "INT-003", "--name", "writer", "--", "sh", "-c", waitFile+
		`w shared/reader-ready; echo writer >> shared/doc.txt && echo > shared/writer-done`)
	if code != 0 {
		t.Fatalf("writer: exit %d\n%s", code, wout)
	}
	if err := reader.Wait(); err != nil {
		t.Fatalf("reader: %v\n%s", err, out.String())
	}
	t.Logf("reader:\n%s", out.String())
	if !strings.Contains(out.String(), "REFUSED") || !strings.Contains(out.String(), "WROTE-AFTER-READ") {
		t.Fatalf("a write over a file another session changed was not refused, or re-reading did not allow it")
	}
	if c, _ := e.SrcContent("shared/doc.txt"); c != "v1\nwriter\nreader\n" {
		t.Errorf("shared/doc.txt is %q", c)
	}
	r := e.WaitRecord("the stale denial", func(r *ledger.Record) bool { return r.Gov().Code == "STALE_FILE" })
	if g := r.Gov(); g.Session == nil || g.Session.Name != "reader" || !strings.Contains(g.Reason, "read it again") {
		t.Errorf("stale denial: session %+v reason %q", g.Session, g.Reason)
	}

	// on_stale: record lets the write through and says so in its record;
	// the change came from outside the mount.
	rec := e.Session("--intent", "INT-004", "--name", "recorder", "--", "sh", "-c", waitFile+
		`cat notes/n.txt >/dev/null; echo > notes/ready; w notes/go; echo agent >> notes/n.txt && echo WROTE`)
	out.Reset()
	rec.Stdout, rec.Stderr = &out, &out
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, func() bool { _, err := os.Stat(filepath.Join(e.Src, "notes/ready")); return err == nil }, "the recorder to read")
	testenv.WriteFile(t, filepath.Join(e.Src, "notes/n.txt"), "n1\nhuman edit in the source\n")
	testenv.WriteFile(t, filepath.Join(e.Src, "notes/go"), "")
	if err := rec.Wait(); err != nil || !strings.Contains(out.String(), "WROTE") {
		t.Fatalf("recorder: %v\n%s", err, out.String())
	}
	w := e.WaitRecord("the recorded stale write", testenv.Event(ledger.EventWrite, "notes/n.txt"))
	if w.Gov().Code != "STALE_FILE" {
		t.Errorf("the stale write's record has code %q, want STALE_FILE", w.Gov().Code)
	}
}

func TestSessionEscapesFail(t *testing.T) {
	// Serial: its agent appends to README.md in every FUSE mount's source it can see, parallel tests' sources included.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005") // outside any session, everything is allowed
	readme := filepath.Join(e.Src, "README.md")
	script := fmt.Sprintf(`SRC=%[1]s
echo "1 absolute:"; echo pwned >> "$SRC/README.md"; ls "$SRC"
echo "2 symlink:"; ln -s "$SRC/README.md" src/link && echo pwned >> src/link
echo "3 daemon root:"; ls /proc/%[2]d/root/ 2>&1 | head -2; ls /proc | grep -c '^[0-9]'
echo "4 mountinfo:"; for p in $(awk '$9 ~ /fuse/ {print $10}' /proc/self/mountinfo) $(awk '{print $5}' /proc/self/mountinfo | grep -F "$SRC"); do echo "trying $p"; echo pwned >> "$p/README.md"; done
echo "5 unshare:"; unshare -Urm sh -c 'umount "$0"; echo pwned >> "$0/README.md"; echo INT-005 > %[3]s/.intentfs/active; echo pwned >> %[3]s/README.md' "$SRC"
unshare -Urmpf --mount-proc sh -c 'echo INT-005 > %[3]s/.intentfs/active; echo pwned >> %[3]s/README.md'
echo "6 daemonised:"; (setsid sh -c 'sleep 0.3; echo pwned >> README.md || echo late-denied > src/late.txt' &); sleep 1.2
echo "7 privileges:"; grep NoNewPrivs /proc/self/status; id -u
echo end`, e.Src, os.Getpid(), e.Mnt)
	out, code := e.RunSession("--intent", "INT-001", "--name", "escaper", "--", "sh", "-c", script)
	t.Logf("exit %d\n%s", code, out)
	if c, _ := os.ReadFile(readme); string(c) != "human readme\n" {
		t.Fatalf("README.md in the source became %q", c)
	}
	if !strings.Contains(out, "end") {
		t.Fatalf("the script did not finish")
	}
	for _, want := range []string{"NoNewPrivs:\t1", fmt.Sprintf("\n%d\n", testenv.AgentUID)} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !strings.Contains(out, "trying") {
		t.Errorf("mountinfo showed no fuse mount to try")
	}
	if c, ok := e.SrcContent("src/late.txt"); !ok || c != "late-denied\n" {
		t.Errorf("the daemonised child was not kept in the session (src/late.txt: %q, %v)", c, ok)
	}
	// Every refusal of the session is the session's.
	var denied int
	for _, r := range e.Records() {
		if g := r.Gov(); g.Event == ledger.EventDenied && r.Path() == "README.md" {
			denied++
			if g.Session == nil || g.Session.Name != "escaper" {
				t.Errorf("a denial of README.md names session %+v", g.Session)
			}
		}
	}
	if denied == 0 {
		t.Errorf("no denial of README.md was recorded")
	}
	if a := e.D.ActiveIntent(); a != "INT-005" {
		t.Errorf("the mount's intent is %q", a)
	}
}

func TestSessionRefusesToRunAsRootByDefault(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	e := testenv.Mount(t, testenv.SessionPolicy, "", map[string]string{"src/a.txt": "a\n"}) // a root-owned source
	bin, err := testenv.CLIBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--mount", e.Mnt, "--", "id")
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+e.Reg, "SUDO_USER=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--user root") {
		t.Fatalf("run as root by default: %v\n%s", err, out)
	}
}

func TestSessionAcceptanceChecksRunAsTheAgent(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	// An agent holds INT-001 while the human completes it.
	holder := e.Session("--intent", "INT-001", "--name", "worker", "--", "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	testenv.WaitFor(t, func() bool { s, ok := e.SessionNamed("worker"); return ok && s.Live }, "the worker's session")

	out, err := e.CLI("intent", "complete", "INT-001", "--source", e.Src, "--json")
	t.Logf("%v\n%s", err, out)
	var res struct {
		Completed bool `json:"completed"`
		Results   []struct {
			Passed bool   `json:"passed"`
			Output string `json:"output"`
		} `json:"results"`
	}
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
		t.Fatalf("complete --json: %v", jerr)
	}
	if !res.Completed || len(res.Results) != 1 || !res.Results[0].Passed || strings.TrimSpace(res.Results[0].Output) != strconv.Itoa(testenv.AgentUID) {
		t.Fatalf("the check did not run as uid %d: %+v", testenv.AgentUID, res)
	}
	if a := e.D.ActiveIntent(); a != "INT-005" {
		t.Errorf("complete changed the mount's intent to %q", a)
	}
	if s, _ := e.SessionNamed("worker"); s.Intent != "INT-001" {
		t.Errorf("complete changed the worker's intent to %q", s.Intent)
	}
	testenv.WaitFor(t, func() bool { return e.D.Snapshot().Intents.Get("INT-001").Status == "COMPLETE" }, "INT-001 to be COMPLETE")
}

func TestUnmountEndsSessions(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "")
	s := e.Session("--intent", "INT-001", "--name", "long", "--", "sh", "-c", "echo > src/started; exec sleep 120")
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	// The command itself must be running: a session is live before its
	// command starts, and an unmount in between ends a session that could
	// not start (125), not a command that was killed.
	testenv.WaitFor(t, func() bool { i, ok := e.SessionNamed("long"); return ok && i.Live }, "the session")
	testenv.WaitFor(t, func() bool { _, ok := e.SrcContent("src/started"); return ok }, "the session's command to start")
	if err := e.D.Unmount(); err != nil {
		t.Fatalf("unmount with a live session: %v", err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGKILL) {
			t.Errorf("the session ended with %v, want killed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session outlived the unmount")
	}
	ended := false
	if err := ledger.Scan(e.D.LedgerPath(), func(_ int, r *ledger.Record) error {
		ended = ended || (r.Gov().Event == ledger.EventSessionEnd && r.Gov().Session != nil && r.Gov().Session.Name == "long")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !ended {
		t.Errorf("no session_end record for the session the unmount ended")
	}
}
