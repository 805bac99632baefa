package agents

import (
	"os/exec"

	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// TestShellOnlyHandshake is an agent with nothing but a shell: it
// discovers the intents, selects one (which starts it), reads the context,
// works, is denied, reads why, and records a lesson.
func TestShellOnlyHandshake(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.WorkflowPolicy, "", map[string]string{"specs/greeting.md": "# Greeting spec\nSay hello.\n", "README.md": "r\n"})
	if out := e.MustSh("cat .intentfs/README.md"); !strings.Contains(out, "echo INT-001 > .intentfs/active") {
		t.Fatalf("guide: %s", out)
	}
	if out := e.MustSh("cat .intentfs/intents"); !strings.Contains(out, "INT-001    PENDING") || !strings.Contains(out, "INT-002    BLOCKED") {
		t.Fatalf("intents:\n%s", out)
	}
	if out, err := e.Sh("/bin/echo INT-002 > .intentfs/active"); err == nil || !strings.Contains(out, "Invalid argument") {
		t.Fatalf("selecting a BLOCKED intent: %v %s", err, out)
	}
	e.MustSh("echo INT-001 > .intentfs/active")
	// Selecting the PENDING intent started it, in the policy file itself.
	in, _, err := policy.LoadIntents(filepath.Join(e.Src, policy.IntentsFile))
	if err != nil || in.Get("INT-001").Status != policy.StatusInProgress {
		t.Fatalf("after select: %v %+v", err, in.Get("INT-001"))
	}
	b, _ := os.ReadFile(filepath.Join(e.Src, policy.IntentsFile))
	if !strings.HasPrefix(string(b), "# Policy for the workflow test. This comment must survive write-back.\n") {
		t.Fatal("write-back lost the comment")
	}
	e.WaitRecord("transition", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventTransition && g.From == "PENDING" && g.To == "IN_PROGRESS" && g.Process != nil && g.Process.Comm == "sh"
	})

	e.MustSh("mkdir -p src && echo hello > src/greeting.txt")
	e.MustDeny("/bin/echo hi >> README.md") // /bin/echo: a shell's own echo reports a refused write(2) (the cached data path's) as "I/O error"
	if out := e.MustSh("tail -n 1 .intentfs/denials"); !strings.Contains(out, "README.md") || !strings.Contains(out, "OUT_OF_SCOPE") {
		t.Fatalf("denials: %s", out)
	}
	e.WaitRecord("create", testenv.Event(ledger.EventCreate, "src/greeting.txt"))
	ctx := e.MustSh("cat .intentfs/context")
	for _, want := range []string{`<intent_context id="INT-001" name="Greeting service" status="IN_PROGRESS"`, "<pattern>src/**</pattern>",
		"<constraint>Keep it friendly</constraint>", `<file path="src/greeting.txt" />`, `event="create" path="src/greeting.txt"`,
		"# Greeting spec", `check="test -s src/greeting.txt"`} {
		if !strings.Contains(ctx, want) {
			t.Errorf("context lacks %s:\n%s", want, ctx)
		}
	}
	e.MustSh("echo 'greetings live in src/greeting.txt' > .intentfs/lesson")
	if out, err := e.Sh("/bin/echo '   ' > .intentfs/lesson"); err == nil {
		t.Errorf("empty lesson accepted: %s", out)
	}
	lessons, _ := os.ReadFile(filepath.Join(e.Src, ".orchestration/CLAUDE.md"))
	for _, want := range []string{"## Lessons Learned", "[INT-001] greetings live in src/greeting.txt", "[INT-001] Changing `README.md` is outside"} {
		if !strings.Contains(string(lessons), want) {
			t.Errorf("CLAUDE.md lacks %q:\n%s", want, lessons)
		}
	}
	// The same denial again teaches nothing new.
	e.MustDeny("/bin/echo again >> README.md")
	lessons2, _ := os.ReadFile(filepath.Join(e.Src, ".orchestration/CLAUDE.md"))
	if strings.Count(string(lessons2), "README.md") != 1 {
		t.Errorf("duplicate lesson:\n%s", lessons2)
	}
}

func TestIntentMapFollowsRenameAndDelete(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-001", nil)
	e.MustSh("mkdir -p src && echo a > src/a.go && echo b > src/b.go && mv src/b.go src/c.go && rm src/a.go && echo more >> src/c.go")
	path := filepath.Join(e.Src, ".orchestration/intent_map.md")
	var s string
	testenv.WaitFor(t, func() bool {
		b, _ := os.ReadFile(path)
		s = string(b)
		return strings.Contains(s, "`src/c.go`") && !strings.Contains(s, "`src/a.go`") && !strings.Contains(s, "`src/b.go`") && strings.Contains(s, "EVOLUTION")
	}, "intent_map.md to show src/c.go only, as EVOLUTION")
	if !strings.Contains(s, "## INT-001: api work") {
		t.Fatalf("section heading missing:\n%s", s)
	}
}

// TestLifecycleFromTheCLI drives the lifecycle with the binary, against a
// mounted source (through the daemon) and an unmounted one.
func TestLifecycleFromTheCLI(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.WorkflowPolicy)

	// Unmounted: the CLI writes the policy and the ledger itself.
	c.Must("intent", "new", "INT-003", "--name", "Sub work", "--scope", "src/sub/**", "--parent", "INT-001", "--source", repo)
	if out, code := c.Run("intent", "scope", "INT-003", "--add", "lib/**", "--source", repo); code != 1 || !strings.Contains(out, "not inside the scope of its parent INT-001") {
		t.Fatalf("escaping scope: exit %d %s", code, out)
	}
	if out, code := c.Run("intent", "unblock", "INT-001", "--source", repo); code != 1 || !strings.Contains(out, "not BLOCKED") {
		t.Fatalf("unblock of PENDING: exit %d %s", code, out)
	}
	if out, code := c.Run("intent", "complete", "INT-002", "--source", repo); code != 1 || !strings.Contains(out, "BLOCKED") {
		t.Fatalf("complete of BLOCKED: exit %d %s", code, out)
	}
	if out, code := c.Run("intent", "archive", "INT-009", "--source", repo); code != 1 || !strings.Contains(out, "unknown intent") {
		t.Fatalf("archive unknown: exit %d %s", code, out)
	}

	c.Must("mount", repo, ws)
	t.Cleanup(func() { c.Run("unmount", ws); testenv.DetachMount(ws) })
	c.Must("intent", "start", "INT-001", "--source", repo, "--reason", "go")
	if out, code := c.Run("intent", "start", "INT-001", "--source", repo); code != 1 || !strings.Contains(out, "COMPLETE or BLOCKED or ARCHIVED") {
		t.Fatalf("start twice: exit %d %s", code, out)
	}
	// A failing check: the greeting does not exist yet.
	out, code := c.Run("intent", "complete", "INT-001", "--source", repo, "--user", "1000")
	if code != 1 || !strings.Contains(out, "FAIL  the greeting exists") || !strings.Contains(out, "stays IN_PROGRESS") {
		t.Fatalf("failing complete: exit %d\n%s", code, out)
	}
	lessons, _ := os.ReadFile(filepath.Join(repo, ".orchestration/CLAUDE.md"))
	if !strings.Contains(string(lessons), `Acceptance check failed for "the greeting exists"`) {
		t.Fatalf("no lesson for the failed check:\n%s", lessons)
	}
	// Do the work through the mount, then complete.
	sh := exec.Command("sh", "-c", "echo 'INT-001' > .intentfs/active && mkdir -p src && echo hello > src/greeting.txt")
	sh.Dir = ws
	if o, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("work: %v %s", err, o)
	}
	out = c.Must("intent", "complete", "INT-001", "--source", repo, "--user", "1000")
	if !strings.Contains(out, "PASS  the greeting exists") || !strings.Contains(out, "INT-001 is now COMPLETE") {
		t.Fatalf("passing complete:\n%s", out)
	}
	out = c.Must("intent", "list", "--source", repo)
	if !strings.Contains(out, "INT-001  COMPLETE") || !strings.Contains(out, "INT-003  PENDING") {
		t.Fatalf("list:\n%s", out)
	}
	if out := c.Must("intent", "show", "INT-003", "--source", repo); !strings.Contains(out, "▶ INT-003 Sub work") {
		t.Fatalf("show tree:\n%s", out)
	}
	c.Must("unmount", ws)
	// Every transition is in the ledger, in order, attributed.
	var seq []string
	ledger.Scan(filepath.Join(repo, ledger.FileName), func(_ int, r *ledger.Record) error {
		if g := r.Gov(); g.Event == ledger.EventTransition {
			seq = append(seq, ledger.Str(g.IntentID)+":"+g.From+">"+g.To)
			if g.Process == nil || !strings.HasPrefix(g.Process.Comm, "intentfs") {
				t.Errorf("transition by %+v", g.Process)
			}
		}
		return nil
	})
	want := "INT-003:>PENDING INT-001:PENDING>IN_PROGRESS INT-001:IN_PROGRESS>COMPLETE"
	if strings.Join(seq, " ") != want {
		t.Fatalf("transitions %v, want %s", seq, want)
	}
	c.Must("intent", "archive", "INT-001", "--source", repo)
	out = c.Must("context", "INT-003", "--source", repo)
	if !strings.Contains(out, `<parent id="INT-001" name="Greeting service" status="ARCHIVED" />`) {
		t.Fatalf("offline context:\n%s", out)
	}
}

// TestCompleteUnmountedHonoursTheLessonsFile: on an unmounted source,
// `intent complete` runs the checks in a mount of its own, and a failed
// check is a lesson in the file --lessons-file names, as a mount's would be.
func TestCompleteUnmountedHonoursTheLessonsFile(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	c, repo, _ := testenv.NewPolicyRepo(t, strings.Replace(testenv.WorkflowPolicy, "status: PENDING", "status: IN_PROGRESS", 1))
	out, code := c.Run("intent", "complete", "INT-001", "--source", repo, "--lessons-file", "AGENT.md", "--user", "1000")
	if code != 1 || !strings.Contains(out, "FAIL  the greeting exists") {
		t.Fatalf("failing complete: exit %d\n%s", code, out)
	}
	lessons, _ := os.ReadFile(filepath.Join(repo, ".orchestration/AGENT.md"))
	if !strings.Contains(string(lessons), `Acceptance check failed for "the greeting exists"`) {
		t.Fatalf("no lesson in AGENT.md:\n%s", lessons)
	}
	if _, err := os.Lstat(filepath.Join(repo, ".orchestration/CLAUDE.md")); !os.IsNotExist(err) {
		t.Errorf("CLAUDE.md written although --lessons-file names AGENT.md: %v", err)
	}
	if out, code := c.Run("intent", "complete", "INT-001", "--source", repo, "--lessons-file", "../x.md"); code != 1 || !strings.Contains(out, "must be a file name in .orchestration/") {
		t.Errorf("a lessons file outside .orchestration/: exit %d\n%s", code, out)
	}
}
