package agents

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/accept"
	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/ledger"
)

// TestAcceptMakesVerifyGreen: a human's edit, a new file and a chown made
// in the source, outside the mount, make verify fail; intentfs accept,
// run by the human outside the mount, records them, after which verify
// passes, blame credits the accepted lines to the human, and the record
// says who accepted and why.
func TestAcceptMakesVerifyGreen(t *testing.T) {
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `printf 'a\nagent line\n' > src/a.txt`); err != nil {
		t.Fatalf("agent write: %v\n%s", err, out)
	}
	e.WaitRecord("the agent's write", func(r *ledger.Record) bool {
		return r.Path() == "src/a.txt" && ledger.Str(r.Gov().PostHash) == testenv.ShaOf([]byte("a\nagent line\n"))
	})
	// The human, in the source.
	f, err := os.OpenFile(filepath.Join(e.Src, "src/a.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("human line\n")
	f.Close()
	testenv.WriteFile(t, filepath.Join(e.Src, "new.txt"), "the human's new file\n")
	if err := os.Chown(filepath.Join(e.Src, "README.md"), 0, 0); err != nil {
		t.Fatal(err)
	}

	out, err := e.CLI("verify", "--source", e.Src)
	for _, p := range []string{"src/a.txt", "new.txt", "README.md"} {
		if err == nil || !strings.Contains(out, p) {
			t.Fatalf("verify before accept: %v, want a problem with %s\n%s", err, p, out)
		}
	}

	// From inside the mount it is refused.
	bin, _ := testenv.CLIBinary()
	inside := testenv.CommandIn(e.Mnt, bin, "accept", "src/a.txt")
	inside.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+e.Reg)
	if b, err := inside.CombinedOutput(); err == nil || !strings.Contains(string(b), "inside the mount") {
		t.Fatalf("accept from inside the mount: %v\n%s", err, b)
	}

	out, err = e.CLI("accept", "--source", e.Src, "src/a.txt", "new.txt", "README.md", "--reason", "my own edit")
	if err != nil || !strings.Contains(out, "accepted src/a.txt") {
		t.Fatalf("accept: %v\n%s", err, out)
	}
	if out, err := e.CLI("verify", "--source", e.Src); err != nil || !strings.HasPrefix(out, "OK") {
		t.Fatalf("verify after accept: %v\n%s", err, out)
	}

	var acc *ledger.Record
	for _, r := range e.Records() {
		if r.Gov().Event == ledger.EventAccept && r.Path() == "src/a.txt" {
			acc = r
		}
	}
	if acc == nil {
		t.Fatal("no accept record for src/a.txt")
	}
	g := acc.Gov()
	if ledger.Str(g.PostHash) != e.Sha("src/a.txt") || g.Process == nil || g.Process.Uid != 0 ||
		!strings.Contains(g.Reason, "accepted by root (uid 0)") || !strings.Contains(g.Reason, "my own edit") ||
		!strings.Contains(g.Reason, "owner 1000:1000") || acc.Files[0].Conversations[0].Contributor.Type != "human" {
		t.Errorf("accept record: %+v process %+v files %+v", g, g.Process, acc.Files)
	}

	out, err = e.CLI("blame", "--source", e.Src, "--json", "src/a.txt")
	if err != nil {
		t.Fatalf("blame: %v\n%s", err, out)
	}
	var lines []history.BlameLine
	if err := json.Unmarshal([]byte(out), &lines); err != nil {
		t.Fatalf("blame json: %v\n%s", err, out)
	}
	if len(lines) != 3 || lines[1].Contributor != "ai" || lines[2].Contributor != "human" || lines[2].Event != "accept" {
		t.Errorf("blame after accept: %+v", lines)
	}
}

// TestAcceptRefusedInsideASession: the daemon refuses an accept asked by
// a process of an agent session, or by one working inside the mount, even
// as root and past the CLI's own checks.
func TestAcceptRefusedInsideASession(t *testing.T) {
	// Serial: it starts an agent session, whose mount namespace copies every mount of the other tests (serving them past their unmount until the session ends) and covers each FUSE mount as it starts.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	testenv.WriteFile(t, filepath.Join(e.Src, "src/a.txt"), "changed behind the ledger\n")
	req := accept.Request{Paths: []string{"src/a.txt"}, Reason: "the agent says so"}

	holder := e.Session("--intent", "INT-001", "--name", "acceptor", "--", "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	var root uint32
	testenv.WaitFor(t, func() bool {
		s, ok := e.SessionNamed("acceptor")
		root = uint32(s.RootPid)
		return ok && s.Live
	}, "the session")
	if _, err := e.D.Accept(req, &ledger.Process{Pid: root, Uid: 0}); err == nil || !strings.Contains(err.Error(), "agent session") {
		t.Errorf("accept from a session's process: %v", err)
	}

	sleeper := testenv.CommandIn(e.Mnt, "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	cwd := filepath.Join("/proc", strconv.Itoa(sleeper.Process.Pid), "cwd")
	testenv.WaitFor(t, func() bool { d, _ := os.Readlink(cwd); return d == e.Mnt }, "the process to enter the mount")
	if _, err := e.D.Accept(req, &ledger.Process{Pid: uint32(sleeper.Process.Pid), Uid: 0}); err == nil || !strings.Contains(err.Error(), "inside the mount") {
		t.Errorf("accept from a process inside the mount: %v", err)
	}
	for _, r := range e.Records() {
		if r.Gov().Event == ledger.EventAccept {
			t.Errorf("a refused accept was recorded: %+v", r.Gov())
		}
	}
	if out, err := e.CLI("verify", "--source", e.Src); err == nil {
		t.Errorf("verify passes after refused accepts:\n%s", out)
	}
}

// TestHookInstallLeavesVerifyClean: intentfs hook install claude writes
// .claude/settings.json in the source, outside the mount; it records that
// write as accepted, so verify stays green.
func TestHookInstallLeavesVerifyClean(t *testing.T) {
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	if out, err := e.CLI("verify", "--source", e.Src); err != nil {
		t.Fatalf("verify before: %v\n%s", err, out)
	}
	bin, _ := testenv.CLIBinary()
	cmd := exec.Command(bin, "hook", "install", "claude")
	cmd.Dir = e.Src
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+e.Reg)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "recorded .claude/settings.json") {
		t.Fatalf("hook install: %v\n%s", err, out)
	}
	if out, err := e.CLI("verify", "--source", e.Src); err != nil || !strings.HasPrefix(out, "OK") {
		t.Fatalf("verify after hook install: %v\n%s", err, out)
	}
}

// TestAcceptOnAnUnmountedSource: with no daemon, intentfs accept writes
// the ledger itself, under the source's lock, and the chain stays whole.
func TestAcceptOnAnUnmountedSource(t *testing.T) {
	testenv.Serial(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	testenv.WriteFile(t, filepath.Join(repo, "src/a.go"), "package a\n")
	c.Must("mount", "./repo", ws, "--intent", "INT-002")
	t.Cleanup(func() { testenv.DetachMount(ws) })
	sh := exec.Command("sh", "-c", "echo '// agent' >> src/a.go")
	sh.Dir = ws
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("agent write: %v\n%s", err, out)
	}
	testenv.WaitFor(t, func() bool { return strings.Contains(c.Must("log", "--source", "./repo"), "src/a.go") }, "the write's record")
	c.Must("unmount", ws)
	testenv.WriteFile(t, filepath.Join(repo, "src/a.go"), "package a\n// agent\n// human\n")
	if out, code := c.Run("verify", "--source", "./repo"); code == 0 {
		t.Fatalf("verify before accept passes:\n%s", out)
	}
	if out := c.Must("accept", "--source", "./repo", "src/a.go", "--reason", "reviewed"); !strings.Contains(out, "accepted src/a.go") {
		t.Fatalf("accept: %s", out)
	}
	if out := c.Must("verify", "--source", "./repo"); !strings.HasPrefix(out, "OK") || !strings.Contains(out, "hash chain intact") {
		t.Fatalf("verify after accept:\n%s", out)
	}
}
