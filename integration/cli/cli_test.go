package cli

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// newStoryRepo runs "intentfs init ./repo" in a fresh directory and starts
// the example intent (PENDING until a human edits it), as the README's
// story does. It returns the CLI, the repo and an empty workspace.
func newStoryRepo(t *testing.T) (c *testenv.CLI, repo, ws string) {
	t.Helper()
	testenv.RequireFUSE(t)
	c = testenv.NewCLI(t)
	os.Chmod(c.Dir, 0o755)
	repo, ws = filepath.Join(c.Dir, "repo"), filepath.Join(c.Dir, "workspace")
	os.Mkdir(ws, 0o755)
	c.Must("init", "./repo")
	pol := filepath.Join(repo, policy.IntentsFile)
	b, err := os.ReadFile(pol)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pol, []byte(strings.Replace(string(b), "status: PENDING", "status: IN_PROGRESS", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return c, repo, ws
}

// TestUserStory is the README's story, run with the real binary: init,
// edit, mount in the background, select, work, status, log, unmount.
func TestUserStory(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := newStoryRepo(t)
	if out, code := c.Run("init", "./repo"); code != 0 || !strings.Contains(out, "kept  repo/"+policy.IntentsFile+" (already there; not overwritten)") {
		t.Fatalf("second init: exit %d %q", code, out)
	}

	out := c.Must("mount", "./repo", ws)
	mounted := true
	t.Cleanup(func() {
		if mounted {
			c.Run("unmount", ws)
			syscall.Unmount(ws, syscall.MNT_DETACH)
		}
	})
	if !strings.Contains(out, "mounted ./repo at "+ws) {
		t.Fatalf("mount output %q", out)
	}
	if out, code := c.Run("mount", "./repo", t.TempDir()); code != 1 || !strings.Contains(out, "already mounted") {
		t.Fatalf("second mount of the same source: exit %d %q", code, out)
	}

	c.Must("select", "INT-001", "--mount", ws)
	if out, code := c.Run("select", "INT-999"); code != 1 || !strings.Contains(out, "unknown intent") {
		t.Fatalf("select unknown: exit %d %q", code, out)
	}
	sh := exec.Command("sh", "-c", "mkdir -p src && echo 'package main' > src/main.go && echo nope > NOTES.md")
	sh.Dir = ws
	shOut, err := sh.CombinedOutput()
	if err == nil || !strings.Contains(string(shOut), "Permission denied") {
		t.Fatalf("agent commands: %v %s", err, shOut)
	}

	// status finds the mount from the current directory, too.
	c.Dir = ws
	var st control.Status
	if err := json.Unmarshal([]byte(c.Must("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.ActiveIntent != "INT-001" || st.Counters.Denied != 1 || len(st.RecentDenials) != 1 || st.RecentDenials[0].Path != "NOTES.md" {
		t.Fatalf("status %+v", st)
	}
	if human := c.Must("status"); !strings.Contains(human, "NOTES.md") || !strings.Contains(human, "INT-001") {
		t.Fatalf("status text:\n%s", human)
	}
	// The transport: the one the suite runs on, named in both forms.
	if want := testenv.TestTransport(); st.Transport != "dev" && st.Transport != "uring" || want != "" && want != "auto" && st.Transport != want {
		t.Fatalf("status transport %q (INTENTFS_TRANSPORT=%q)", st.Transport, want)
	}
	if human := c.Must("status"); !strings.Contains(human, "transport:  "+st.Transport+" (") {
		t.Fatalf("status text lacks the transport %q:\n%s", st.Transport, human)
	}
	// Records reach the ledger by RELEASE, after close(2) returned.
	testenv.WaitFor(t, func() bool { return strings.Contains(c.Must("log"), "src/main.go") }, "`intentfs log` to show src/main.go")
	events := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(c.Must("log", "--json", "--limit", "50")))
	for sc.Scan() {
		var r ledger.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log --json line: %v", err)
		}
		events[string(r.Gov().Event)+" "+r.Path()] = true
	}
	for _, want := range []string{"select ", "mkdir src", "create src/main.go", "denied NOTES.md"} {
		if !events[want] {
			t.Errorf("log lacks %q: %v", want, events)
		}
	}

	c.Dir = t.TempDir()
	c.Must("unmount", ws)
	mounted = false
	if out, code := c.Run("status"); code != 3 || !strings.Contains(out, "no intentfs mount") {
		t.Fatalf("status after unmount: exit %d %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "src")); err == nil {
		t.Fatal("the mountpoint still shows the source after unmount")
	}
	// The ledger is complete on disk and valid after unmount.
	out = c.Must("log", "--source", repo, "--limit", "100")
	if !strings.Contains(out, "src/main.go") {
		t.Fatalf("log --source:\n%s", out)
	}
}

func TestMountRefusesInvalidPolicy(t *testing.T) {
	testenv.Parallel(t)
	testenv.RequireFUSE(t)
	c := testenv.NewCLI(t)
	testenv.WriteFile(t, filepath.Join(c.Dir, "repo", policy.IntentsFile), "active_intents:\n  - id: bad\n    name: x\n")
	out, code := c.Run("mount", "repo", t.TempDir())
	if code != 1 || !strings.Contains(out, "active_intents.yaml:2:9") || !strings.Contains(out, "does not match") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	out, code = c.Run("mount", t.TempDir(), t.TempDir())
	if code != 1 || !strings.Contains(out, "intentfs init") {
		t.Fatalf("missing policy: exit %d:\n%s", code, out)
	}
}

func TestForegroundMountUnmountsOnSIGTERM(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	cmd := exec.Command(c.Bin, "mount", "--foreground", "--intent", "INT-002", repo, ws)
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+c.Runtime)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); syscall.Unmount(ws, syscall.MNT_DETACH) })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if !strings.HasPrefix(line, "mounted ") {
		t.Fatalf("foreground mount said %q", line)
	}
	if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("foreground mount exit: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "f.txt")); err == nil {
		t.Fatal("still mounted after SIGTERM")
	}
	// The record made at RELEASE was flushed before exit.
	var saw bool
	ledger.Scan(filepath.Join(repo, ledger.FileName), func(_ int, r *ledger.Record) error {
		saw = saw || (r.Gov().Event == ledger.EventCreate && r.Path() == "f.txt")
		return nil
	})
	if !saw {
		t.Fatal("the create of f.txt is not in the ledger after SIGTERM")
	}
}

func TestEveryCommandHasHelpWithAnExample(t *testing.T) {
	testenv.Parallel(t)
	c := testenv.NewCLI(t)
	top := c.Must("--help")
	for _, name := range []string{"init", "mount", "select", "status", "log", "unmount", "intent", "context", "agent-guide", "verify", "diff", "revert", "blame", "gc", "demo", "version"} {
		if !strings.Contains(top, "  "+name+" ") {
			t.Errorf("top-level help lacks %s", name)
		}
		out := c.Must(name, "--help")
		if !strings.Contains(out, "Usage: intentfs "+name) || !strings.Contains(out, "Example") {
			t.Errorf("%s --help:\n%s", name, out)
		}
	}
	if _, code := c.Run("mount", "--bogus"); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
	if _, code := c.Run("nosuchcommand"); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
	if out, code := c.Run("status"); code != 3 || !strings.Contains(out, "no intentfs mount") {
		t.Errorf("status with no mount: exit %d %q", code, out)
	}
}

// TestKeepMaxBytesZeroKeepsNoPreImages: --keep-max-bytes 0 trades undo for
// speed. Changes are still hashed and recorded, but no version is kept.
func TestKeepMaxBytesZeroKeepsNoPreImages(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := newStoryRepo(t)
	testenv.WriteFile(t, filepath.Join(repo, "src/a.txt"), "alpha\n")

	c.Must("mount", "--keep-max-bytes", "0", "--intent", "INT-001", "./repo", ws)
	t.Cleanup(func() { syscall.Unmount(ws, syscall.MNT_DETACH) })
	sh := exec.Command("sh", "-c", "sed -i s/alpha/beta/ src/a.txt && rm src/a.txt")
	sh.Dir = ws
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	c.Must("unmount", ws)

	kept := map[ledger.Event]string{}
	ledger.Scan(filepath.Join(repo, ledger.FileName), func(_ int, r *ledger.Record) error {
		if g := r.Gov(); g != nil && r.Path() == "src/a.txt" {
			kept[g.Event] = g.PreImage
		}
		return nil
	})
	for _, ev := range []ledger.Event{ledger.EventRename, ledger.EventDelete} {
		if pi, ok := kept[ev]; !ok || !strings.HasPrefix(pi, "not kept") {
			t.Fatalf("%s record: pre_image %q (recorded: %v), want \"not kept…\"", ev, pi, ok)
		}
	}
}

// TestProfilesFromTheEnvironment: any command writes a CPU profile, a
// block profile and a mutex profile where the environment says, readable
// by its owner only.
func TestProfilesFromTheEnvironment(t *testing.T) {
	testenv.Parallel(t)
	bin := testenv.IntentfsBinary(t)
	dir := t.TempDir()
	cpu, block, mutex := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "block.prof"), filepath.Join(dir, "mutex.prof")
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "INTENTFS_CPUPROFILE="+cpu, "INTENTFS_BLOCKPROFILE="+block, "INTENTFS_MUTEXPROFILE="+mutex)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, p := range []string{cpu, block, mutex} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() == 0 {
			t.Fatalf("%s is empty", p)
		}
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v, want 0600", p, st.Mode().Perm())
		}
	}
}
