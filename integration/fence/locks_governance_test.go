package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/policy"
)

// TestAgentCannotLockOutTheHuman: the agent takes locks through the mount
// on the files intentfs locks (the policy's writer lock, the mount's own
// lock) while holding them as long as it likes. Each lock is refused, and
// the human's `intentfs intent block` — the way to stop the agent —
// completes within seconds.
func TestAgentCannotLockOutTheHuman(t *testing.T) {
	testenv.Serial(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.WorkflowPolicy)
	c.Must("mount", repo, ws)
	t.Cleanup(func() { c.Run("unmount", ws); testenv.DetachMount(ws) })
	if err := os.Chmod(filepath.Dir(ws), 0o755); err != nil {
		t.Fatal(err)
	}
	// The first intent command creates the policy's lock file.
	c.Must("intent", "start", "INT-001", "--source", repo, "--reason", "go")
	policyLock := filepath.Join(policy.OrchestrationDir, ".active_intents.yaml.lock")
	if _, err := os.Stat(filepath.Join(repo, policyLock)); err != nil {
		t.Fatalf("the policy's lock file: %v", err)
	}

	for _, lock := range []struct{ name, cmd string }{
		{"flock, read-only", "flock -s " + policyLock + " -c 'echo HELD; sleep 30'"},
		{"flock exclusive", "flock -x " + policyLock + " -c 'echo HELD; sleep 30'"},
		{"fcntl lock", "flock -x -F " + policyLock + " -c 'echo HELD; sleep 30'"},
		{"mount lock", "flock -n -s " + policy.OrchestrationDir + "/.intentfs.lock -c 'echo HELD; sleep 30'"},
	} {
		t.Run(lock.name, func(t *testing.T) {
			locksBefore := map[string]int{}
			for _, p := range []string{policyLock, policy.OrchestrationDir + "/.intentfs.lock"} {
				locksBefore[p] = locksOnInode(t, filepath.Join(repo, p))
			}
			agent := testenv.CommandIn(ws, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sh", "-c", lock.cmd)
			var out testenv.SyncBuffer
			agent.Stdout, agent.Stderr = &out, &out
			agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := agent.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- agent.Wait() }()
			defer func() {
				syscall.Kill(-agent.Process.Pid, syscall.SIGKILL)
				<-done
			}()
			// Wait for the agent to hold the lock or to be refused.
			var exited bool
			testenv.WaitFor(t, func() bool {
				select {
				case <-done:
					exited = true
					done <- nil
					return true
				default:
				}
				return strings.Contains(out.String(), "HELD")
			}, "the agent's lock to be taken or refused")
			if !exited && testenv.TestDataPath() == "cached" {
				// On the cached data path the kernel keeps the lock among
				// the mount's users (no handle holds it at the source): it
				// is the agent's to take, and must not reach the source,
				// where intentfs and the humans' commands lock.
				args := strings.Fields(strings.Split(lock.cmd, " -c ")[0])
				path := args[len(args)-1]
				if n := locksOnInode(t, filepath.Join(repo, path)); n != locksBefore[path] {
					t.Errorf("the agent's lock through the mount (%s) reached %s in the source: %d locks on it, %d before", lock.cmd, path, n, locksBefore[path])
				}
			} else if !exited {
				t.Errorf("the agent holds a lock on %s through the mount:\n%s", lock.cmd, out.String())
			} else if !strings.Contains(out.String(), "Permission denied") {
				t.Errorf("%s: refused without EACCES:\n%s", lock.cmd, out.String())
			}

			// The human stops the agent, then lets it go on.
			for _, step := range [][]string{
				{"intent", "block", "INT-001", "--source", repo, "--reason", "stop"},
				{"intent", "unblock", "INT-001", "--source", repo},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				cmd := exec.CommandContext(ctx, c.Bin, step...)
				cmd.Dir, cmd.Env = c.Dir, append(os.Environ(), "INTENTFS_RUNTIME_DIR="+c.Runtime)
				start := time.Now()
				o, err := cmd.CombinedOutput()
				hung := ctx.Err() != nil
				cancel()
				if hung {
					t.Fatalf("intentfs %s hung for %v while the agent held a lock:\n%s", strings.Join(step, " "), time.Since(start).Round(time.Second), o)
				}
				if err != nil {
					t.Fatalf("intentfs %s: %v\n%s", strings.Join(step, " "), err, o)
				}
			}
		})
	}
	out := c.Must("intent", "list", "--source", repo)
	if !strings.Contains(out, "INT-001  IN_PROGRESS") {
		t.Fatalf("after block and unblock:\n%s", out)
	}
	if out, code := c.Run("verify", "--source", repo); code != 0 {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
}

// locksOnInode counts the locks /proc/locks lists on the inode of path.
func locksOnInode(t *testing.T, path string) int {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	// The mount's own inode has the same number, on another device.
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for line := range strings.SplitSeq(string(b), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF": the sixth
		// field is the device and inode.
		if f := strings.Fields(line); len(f) >= 6 && f[1] != "->" && f[5] == id {
			n++
		}
	}
	return n
}
