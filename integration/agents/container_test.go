package agents

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// capSysPtrace is CAP_SYS_PTRACE's bit in the capability sets.
const capSysPtrace = 19

// TestContainerEntrypointWithoutPtrace runs `intentfs container` as a
// container engine would: root, but without CAP_SYS_PTRACE (Docker and
// podman drop it). The agent's command runs as the source's owner in a
// sealed session, pinned to its intent; its allowed change is recorded
// as the session's, its denied one fails, it cannot reach the source,
// and its exit status is the entrypoint's. Without CAP_SYS_PTRACE the
// daemon may not open the agent's pid namespace as root: the session
// placement must open it as the agent's owner, or every change of the
// agent would be refused as UNPLACED_PROCESS.
func TestContainerEntrypointWithoutPtrace(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	bin, err := testenv.CLIBinary()
	if err != nil {
		t.Fatal(err)
	}
	noPtrace := []string{"--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace"}
	out, err := exec.Command("setpriv", append(noPtrace, "grep", "^CapEff:", "/proc/self/status")...).CombinedOutput()
	if err != nil {
		t.Fatalf("setpriv: %v\n%s", err, out)
	}
	caps, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(string(out), "CapEff:")), 16, 64)
	if err != nil || caps&(1<<capSysPtrace) != 0 || caps&(1<<21) == 0 {
		t.Fatalf("setpriv did not give CAP_SYS_ADMIN without CAP_SYS_PTRACE: %q (%v)", out, err)
	}

	src, etc, home, mnt := containerWorkspace(t)
	reg := t.TempDir()

	script := `set -u
echo "uid=$(id -u) gid=$(id -g)"
echo agent > src/agent.txt || exit 20
mkdir src/dir || exit 24
echo m > src/m.go && chmod 600 src/m.go || exit 25
if echo no > README.md; then echo "README.md was written"; exit 21; fi
if ls ` + src + ` >/dev/null 2>&1; then echo "the source is reachable"; exit 22; fi
if ls ` + reg + ` >/dev/null 2>&1; then echo "the registry is reachable"; exit 23; fi
echo "active=$(cat .intentfs/active)"
exit 7`
	args := append(noPtrace, bin, "container", "--source", src, "--mountpoint", mnt, "--etc", etc, "--home", home,
		"--intent", "INT-001", "--", "sh", "-c", script)
	cmd := exec.Command("setpriv", args...)
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+reg)
	cmd.Dir = "/"
	raw, err := cmd.CombinedOutput()
	output := string(raw)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("intentfs container: %v, want the command's exit status 7\n%s", err, output)
	}
	for _, want := range []string{fmt.Sprintf("uid=%d gid=%d", testenv.AgentUID, testenv.AgentGID), "README.md: Permission denied", "active=INT-001"} {
		if !strings.Contains(output, want) {
			t.Errorf("output lacks %q:\n%s", want, output)
		}
	}
	if strings.Contains(output, "UNPLACED") {
		t.Errorf("the agent's process was not placed in its session:\n%s", output)
	}
	// Unmounted, and the mountpoint left as it was made.
	if mounts, _ := os.ReadFile("/proc/self/mounts"); strings.Contains(string(mounts), " "+mnt+" ") {
		t.Errorf("%s is still mounted", mnt)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(src, "src/agent.txt"), &st); err != nil {
		t.Fatalf("the allowed write did not reach the source: %v", err)
	}
	if st.Uid != testenv.AgentUID || st.Gid != testenv.AgentGID {
		t.Errorf("src/agent.txt belongs to %d:%d, want the source's owner %d:%d", st.Uid, st.Gid, testenv.AgentUID, testenv.AgentGID)
	}
	// The agent's files get the umask the entrypoint was started with
	// (022 where that was 0), not the daemon's 0.
	umask := processUmask(t)
	if umask == 0 {
		umask = 0o022
	}
	for name, want := range map[string]uint32{"src/agent.txt": 0o666 &^ uint32(umask), "src/dir": 0o777 &^ uint32(umask), "src/m.go": 0o600} {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(src, name), &st); err != nil {
			t.Errorf("%s: %v", name, err)
		} else if st.Mode&0o7777 != want {
			t.Errorf("%s has mode %04o on the host, want %04o", name, st.Mode&0o7777, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(src, "README.md")); string(b) != "human readme\n" {
		t.Errorf("README.md changed: %q", b)
	}
	passwd, _ := os.ReadFile(filepath.Join(etc, "passwd"))
	if !strings.Contains(string(passwd), fmt.Sprintf("\nagent:x:%d:%d:", testenv.AgentUID, testenv.AgentGID)) {
		t.Errorf("no agent account was made:\n%s", passwd)
	}

	// The ledger, closed by the entrypoint: the write as the session's,
	// the denial, the session's end.
	var created, denied, ended bool
	if err := ledger.Scan(filepath.Join(src, ".orchestration", "agent_trace.jsonl"), func(_ int, r *ledger.Record) error {
		g := r.Gov()
		switch {
		case g.Event == ledger.EventCreate && r.Path() == "src/agent.txt":
			created = g.Session != nil && g.IntentID != nil && *g.IntentID == "INT-001"
		case g.Event == ledger.EventDenied && r.Path() == "README.md":
			denied = true
		case g.Event == ledger.EventSessionEnd:
			ended = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !created || !denied || !ended {
		t.Errorf("ledger: create of src/agent.txt by the session under INT-001 %v, denial of README.md %v, session_end %v", created, denied, ended)
	}
	if out, err := exec.Command(bin, "verify", "--source", src).CombinedOutput(); err != nil {
		t.Errorf("intentfs verify: %v\n%s", err, out)
	}
}

// TestContainerStopGraceEndsAnAgentThatIgnoresSIGTERM: docker stop sends
// SIGTERM and kills the container 10 s later. An agent that ignores the
// signal must not take the daemon down with it unrecorded: after the
// stop grace the entrypoint ends the session, unmounts and flushes the
// ledger, which then has the session's end and verifies.
func TestContainerStopGraceEndsAnAgentThatIgnoresSIGTERM(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	bin, err := testenv.CLIBinary()
	if err != nil {
		t.Fatal(err)
	}
	src, etc, home, mnt := containerWorkspace(t)
	cmd := exec.Command(bin, "container", "--source", src, "--mountpoint", mnt, "--etc", etc, "--home", home,
		"--intent", "INT-001", "--", "sh", "-c", `trap "" TERM; echo ready > src/ready.txt; while :; do sleep 0.2; done`)
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+t.TempDir(), "INTENTFS_STOP_GRACE=1s")
	cmd.Dir = "/"
	// Read while the entrypoint may still write it (a failure's message).
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Wait must not wait for the session's processes to close the
	// output too, should one outlive the entrypoint.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // a no-op once it has exited
		<-exited
		if mounts, _ := os.ReadFile("/proc/self/mounts"); strings.Contains(string(mounts), " "+mnt+" ") {
			_ = exec.Command("umount", "-l", mnt).Run()
		}
	})
	testenv.WaitFor(t, func() bool { _, err := os.Stat(filepath.Join(src, "src/ready.txt")); return err == nil }, "the agent's command to start")
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		err = waitErr
	case <-time.After(30 * time.Second):
		// The agent ignores SIGTERM forever: only the grace's SIGKILL
		// ends it. The bound leaves room for a loaded machine (8 s was
		// missed once under the race detector in CI).
		t.Fatalf("the entrypoint did not exit within 30s of SIGTERM with a stop grace of 1s\n%s", out.String())
	}
	elapsed := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Fatalf("intentfs container: %v, want status 137 (the session ended by SIGKILL)\n%s", err, out.String())
	}
	if elapsed < time.Second {
		t.Errorf("the session was ended %v after SIGTERM, before the grace of 1s", elapsed)
	}
	if !strings.Contains(out.String(), "did not exit within the stop grace after SIGTERM; ending its session") {
		t.Errorf("the entrypoint does not say why it ended the session:\n%s", out.String())
	}
	if mounts, _ := os.ReadFile("/proc/self/mounts"); strings.Contains(string(mounts), " "+mnt+" ") {
		t.Errorf("%s is still mounted", mnt)
	}
	var ended bool
	if err := ledger.Scan(filepath.Join(src, ".orchestration", "agent_trace.jsonl"), func(_ int, r *ledger.Record) error {
		ended = ended || r.Gov().Event == ledger.EventSessionEnd
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !ended {
		t.Error("the ledger has no session_end")
	}
	if out, err := exec.Command(bin, "verify", "--source", src).CombinedOutput(); err != nil {
		t.Errorf("intentfs verify: %v\n%s", err, out)
	}
}

// processUmask reads this process's umask from /proc: the other way,
// umask(2), sets it for a moment, and the umask is process-wide, shared
// with the daemons of tests running in parallel.
func processUmask(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Umask:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return int(m)
			}
		}
	}
	t.Fatal("/proc/self/status has no Umask line")
	return 0
}

// containerWorkspace makes what `intentfs container` needs: a source
// owned by the agent's uid with the session policy, README.md and
// src/a.txt; an /etc and /home of the test's own, where the entrypoint
// makes the agent's account instead of the machine's; and the mountpoint
// to be.
func containerWorkspace(t *testing.T) (src, etc, home, mnt string) {
	t.Helper()
	src = testenv.SourceOutsideTmp(t)
	testenv.WriteFile(t, filepath.Join(src, policy.IntentsFile), testenv.SessionPolicy)
	testenv.WriteFile(t, filepath.Join(src, "README.md"), "human readme\n")
	testenv.WriteFile(t, filepath.Join(src, "src/a.txt"), "a\n")
	if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", testenv.AgentUID, testenv.AgentGID), src).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}
	etc, home = t.TempDir(), t.TempDir()
	testenv.WriteFile(t, filepath.Join(etc, "passwd"), "root:x:0:0:root:/root:/bin/sh\n")
	testenv.WriteFile(t, filepath.Join(etc, "group"), "root:x:0:\n")
	return src, etc, home, filepath.Join(t.TempDir(), "workspace")
}
