package cli

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/daemon"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/policy"
)

// The rough edges a new user meets mounting and unmounting, each driven
// through the real binary.

const otherUID = 1000

// worldDir is a directory every user may enter (t.TempDir's are root's
// alone), for tests that run the CLI as another user, owned by owner.
func worldDir(t *testing.T, owner int) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "intentfs-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, owner, owner); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rootMountForAUser mounts, as root, a source holding the scope policy
// and files, in a directory every user may enter. It returns the CLI,
// with its working directory one uid otherUID owns, the source, the
// mountpoint and the runtime directory for running the CLI as that uid.
func rootMountForAUser(t *testing.T, files map[string]string, mountArgs ...string) (c *testenv.CLI, repo, ws, userRuntime string) {
	t.Helper()
	testenv.RequireFUSE(t)
	c = testenv.NewCLI(t)
	base := worldDir(t, 0)
	repo, ws = filepath.Join(base, "repo"), filepath.Join(base, "ws")
	testenv.WriteFile(t, filepath.Join(repo, policy.IntentsFile), testenv.ScopePolicy)
	for p, content := range files {
		testenv.WriteFile(t, filepath.Join(repo, p), content)
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	c.MountCLI(repo, ws, mountArgs...)
	c.Dir = worldDir(t, otherUID)
	return c, repo, ws, filepath.Join(c.Dir, "run")
}

// TestMountAsAUserWhoCannotMountPrintsTheCause: as uid 1000, mounting
// fails in fusermount3; the user is told why, not shown a Go panic.
func TestMountAsAUserWhoCannotMountPrintsTheCause(t *testing.T) {
	testenv.Parallel(t)
	testenv.RequireFUSE(t)
	c := testenv.NewCLI(t)
	c.Dir = worldDir(t, otherUID)
	testenv.WriteFile(t, filepath.Join(c.Dir, "repo", policy.IntentsFile), testenv.ScopePolicy)
	if err := exec.Command("chown", "-R", strconv.Itoa(otherUID)+":"+strconv.Itoa(otherUID), filepath.Join(c.Dir, "repo")).Run(); err != nil {
		t.Fatal(err)
	}
	// A mountpoint the user may not write: fusermount3 refuses it even
	// where /dev/fuse is open to everyone, so the failure is certain.
	ws := filepath.Join(c.Dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	runtime := filepath.Join(c.Dir, "run")

	out, code := c.RunAs(otherUID, runtime, "mount", "./repo", "./ws")
	if code != 1 || strings.Contains(out, "panic") || strings.Contains(out, "goroutine") {
		t.Fatalf("exit %d, want 1 and no panic:\n%s", code, out)
	}
	for _, want := range []string{"mounting " + ws, "fusermount", "the daemon's log", "hint: as uid 1000"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The foreground mount says the same on its terminal.
	out, code = c.RunAs(otherUID, runtime, "mount", "--foreground", "./repo", "./ws")
	if code != 1 || strings.Contains(out, "panic") || !strings.Contains(out, "intentfs mount: mounting "+ws) {
		t.Fatalf("foreground: exit %d:\n%s", code, out)
	}
}

// TestStartFailingAfterTheMountUndoesIt: a failure after the kernel
// mount (here: an unusable registry) returns the cause, unmounts and
// releases the source's lock, instead of panicking in its cleanup.
func TestStartFailingAfterTheMountUndoesIt(t *testing.T) {
	testenv.Parallel(t)
	testenv.RequireFUSE(t)
	src, mnt := t.TempDir(), t.TempDir()
	testenv.WriteFile(t, filepath.Join(src, policy.IntentsFile), testenv.ScopePolicy)
	cfg := daemon.Config{Source: src, Mountpoint: mnt, Version: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Registry: mounts.Registry{Dir: "/dev/null/registry"}, Transport: testenv.TestTransport()}
	d, err := daemon.Start(cfg)
	if err == nil || d != nil || !strings.Contains(err.Error(), "/dev/null/registry") {
		t.Fatalf("Start = %v, %v; want the registry's error", d, err)
	}
	if _, mounted := mounts.IntentfsMountAt(mnt); mounted {
		syscall.Unmount(mnt, syscall.MNT_DETACH)
		t.Fatal("the failed Start left its mount behind")
	}
	// The lock is free: the same source mounts now.
	cfg.Registry = mounts.Registry{Dir: t.TempDir()}
	d, err = daemon.Start(cfg)
	if err != nil {
		t.Fatalf("second Start: %v", err)
	}
	go func() { d.Wait(); d.Close() }()
	if err := d.Unmount(); err != nil {
		t.Fatal(err)
	}
}

// TestSecondMountOnALiveMountpointIsRefused: a second mount onto a live
// one would stack over it and orphan it; it is refused, and the first
// stays reachable.
func TestSecondMountOnALiveMountpointIsRefused(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	repo2 := filepath.Join(c.Dir, "repo2")
	testenv.WriteFile(t, filepath.Join(repo2, policy.IntentsFile), testenv.ScopePolicy)
	c.MountCLI(repo, ws)

	for _, args := range [][]string{{"mount", repo2, ws}, {"mount", "--foreground", repo2, ws}} {
		out, code := c.Run(args...)
		if code != 1 || !strings.Contains(out, ws+" is already an intentfs mount (of "+repo+")") || !strings.Contains(out, "intentfs unmount "+ws) {
			t.Fatalf("%v: exit %d:\n%s", args, code, out)
		}
	}
	if st := c.Status(ws); st.Source != repo {
		t.Fatalf("after the refused mount, status shows source %s, want %s", st.Source, repo)
	}
	c.Must("unmount", ws)
	if _, mounted := mounts.IntentfsMountAt(ws); mounted {
		t.Fatal("a mount is left after unmount: the refused one stacked")
	}
}

// TestMountOverANonEmptyDirectoryNeedsNonempty: the mount would hide the
// directory's files; it is refused unless --nonempty.
func TestMountOverANonEmptyDirectoryNeedsNonempty(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	testenv.WriteFile(t, filepath.Join(ws, "mine.txt"), "mine\n")
	out, code := c.Run("mount", repo, ws)
	if code != 1 || !strings.Contains(out, "not empty") || !strings.Contains(out, `"mine.txt"`) || !strings.Contains(out, "--nonempty") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, mounted := mounts.IntentfsMountAt(ws); mounted {
		t.Fatal("mounted over a non-empty directory without --nonempty")
	}
	c.MountCLI(repo, ws, "--nonempty")
	if _, err := os.Stat(filepath.Join(ws, policy.IntentsFile)); err != nil {
		t.Fatalf("--nonempty did not mount: %v", err)
	}
	c.Must("unmount", ws)
	if b, err := os.ReadFile(filepath.Join(ws, "mine.txt")); err != nil || string(b) != "mine\n" {
		t.Fatalf("the hidden file after unmount: %q %v", b, err)
	}
}

var logLine = regexp.MustCompile(`(?m)^log: (\S+)$`)

// TestCleanUnmountRemovesTheLog: the log of a mount that ends cleanly is
// removed, so logs do not pile up in the runtime directory.
func TestCleanUnmountRemovesTheLog(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	m := logLine.FindStringSubmatch(c.MountCLI(repo, ws))
	if m == nil {
		t.Fatal("mount did not say where its log is")
	}
	if _, err := os.Stat(m[1]); err != nil {
		t.Fatalf("the log while mounted: %v", err)
	}
	c.Must("unmount", ws)
	testenv.WaitFor(t, func() bool { _, err := os.Stat(m[1]); return os.IsNotExist(err) })
}

// TestUnmountAfterTheDaemonWasKilled: kill -9 leaves a dead FUSE mount
// and a registry entry whose socket refuses connections; unmount falls
// back to the kernel, cleans the registry and keeps the log.
func TestUnmountAfterTheDaemonWasKilled(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	logPath := logLine.FindStringSubmatch(c.MountCLI(repo, ws))[1]
	pid := c.Status(ws).Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, func() bool {
		var st syscall.Stat_t
		return syscall.Stat(ws, &st) == syscall.ENOTCONN
	})
	if out, code := c.Run("status", "--mount", ws); code != 1 || !strings.Contains(out, "intentfs unmount "+ws) {
		t.Fatalf("status of a dead mount: exit %d:\n%s", code, out)
	}

	out, code := c.Run("unmount", ws)
	if code != 0 || !strings.Contains(out, "does not answer") || !strings.Contains(out, "unmounted "+ws) || !strings.Contains(out, "intentfs verify --source "+repo) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "log is kept: "+logPath) {
		t.Errorf("unmount does not say where the log is:\n%s", out)
	}
	if _, err := os.Stat(logPath); err != nil {
		t.Errorf("the log of a failed mount was removed: %v", err)
	}
	if _, mounted := mounts.IntentfsMountAt(ws); mounted {
		t.Fatal("still mounted")
	}
	if left, _ := filepath.Glob(filepath.Join(c.Runtime, "*.json")); len(left) != 0 {
		t.Fatalf("registry entries left: %v", left)
	}
	// The source mounts again.
	c.MountCLI(repo, ws)
	c.Must("unmount", ws)
}

// TestUnmountOfABusyMountNamesTheHolders: a process working in the mount
// keeps it busy; unmount names it and offers --lazy, which detaches the
// mount at once and lets the daemon finish when the process leaves.
func TestUnmountOfABusyMountNamesTheHolders(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	testenv.WriteFile(t, filepath.Join(repo, "src/a.txt"), "a\n")
	c.MountCLI(repo, ws)
	pid := c.Status(ws).Pid
	holder := exec.Command("sleep", "60")
	holder.Dir = filepath.Join(ws, "src")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })

	out, code := c.Run("unmount", ws)
	want := fmt.Sprintf("pid %d sleep: working directory %s/src", holder.Process.Pid, ws)
	if code != 1 || !strings.Contains(out, ws+" is busy") || !strings.Contains(out, want) || !strings.Contains(out, "intentfs unmount --lazy "+ws) {
		t.Fatalf("exit %d, want 1 naming %q:\n%s", code, want, out)
	}
	if st := c.Status(ws); st.Pid != pid {
		t.Fatalf("the daemon changed: %+v", st)
	}

	out, code = c.Run("unmount", "--lazy", ws)
	if code != 0 || !strings.Contains(out, "detached "+ws) {
		t.Fatalf("--lazy: exit %d:\n%s", code, out)
	}
	if _, mounted := mounts.IntentfsMountAt(ws); mounted {
		t.Fatal("still in the mount table after --lazy")
	}
	holder.Process.Kill()
	holder.Wait()
	// The last user gone, the daemon flushes, unregisters and exits.
	testenv.WaitFor(t, func() bool {
		left, _ := filepath.Glob(filepath.Join(c.Runtime, "*.json"))
		return len(left) == 0
	})
}

// TestNonRootStatusSaysWhatIsTrue: root's mount is not in uid 1000's
// registry. status shows it read-only from .intentfs/status; select says
// the user may not control it; neither claims no mount is running.
func TestNonRootStatusSaysWhatIsTrue(t *testing.T) {
	// Serial: status without --mount lists the kernel's intentfs mounts, five at most, and parallel tests' mounts crowd this one out.
	testenv.Serial(t)
	c, repo, ws, userRuntime := rootMountForAUser(t, nil, "--intent", "INT-001")

	out, code := c.RunAs(otherUID, userRuntime, "status", "--mount", ws)
	if code != 0 || !strings.Contains(out, "INT-001") || !strings.Contains(out, "read-only:") || !strings.Contains(out, "may not control") {
		t.Fatalf("status as uid %d: exit %d:\n%s", otherUID, code, out)
	}
	out, code = c.RunAs(otherUID, userRuntime, "status", "--mount", ws, "--json")
	var st control.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.ActiveIntent != "INT-001" || st.Mountpoint != ws {
		t.Fatalf("status --json as uid %d: exit %d:\n%s", otherUID, code, out)
	}
	out, code = c.RunAs(otherUID, userRuntime, "select", "INT-002", "--mount", ws)
	if code != 1 || !strings.Contains(out, ws+" is an intentfs mount (of "+repo+") that uid 1000 may not control") {
		t.Fatalf("select as uid %d: exit %d:\n%s", otherUID, code, out)
	}
	if got := c.Status(ws).ActiveIntent; got != "INT-001" {
		t.Fatalf("active intent %s after a refused select", got)
	}
	out, code = c.RunAs(otherUID, userRuntime, "status")
	if code != 3 || !strings.Contains(out, "the kernel shows intentfs mounts") || !strings.Contains(out, ws+" (of "+repo+")") {
		t.Fatalf("status without --mount as uid %d: exit %d:\n%s", otherUID, code, out)
	}
}

// TestNonRootAcceptOfRootsMountSaysSudo: a human whose mount the root
// daemon serves cannot record an acceptance or a scope change through it,
// nor beside it in the locked source. The error names the command that
// works: the same one with sudo and --mount, not "unmount it first".
func TestNonRootAcceptOfRootsMountSaysSudo(t *testing.T) {
	testenv.Serial(t)
	c, repo, ws, userRuntime := rootMountForAUser(t, map[string]string{"notes.txt": "mine\n"}, "--intent", "INT-001")

	for _, args := range [][]string{
		{"accept", "--source", repo, "notes.txt", "--reason", "my edit"},
		{"accept", "--mount", ws, "notes.txt", "--reason", "my edit"},
	} {
		out, code := c.RunAs(otherUID, userRuntime, args...)
		if code == 0 || !strings.Contains(out, "sudo intentfs accept --mount "+ws) || strings.Contains(out, "unmount it first") {
			t.Fatalf("intentfs %s as uid %d: exit %d:\n%s", strings.Join(args, " "), otherUID, code, out)
		}
	}
	out, code := c.RunAs(otherUID, userRuntime, "policy", "suggest", "--mount", ws, "--intent", "INT-001", "--write")
	if code == 0 || !strings.Contains(out, "sudo intentfs policy suggest --mount "+ws) {
		t.Fatalf("policy suggest --write as uid %d: exit %d:\n%s", otherUID, code, out)
	}
}
