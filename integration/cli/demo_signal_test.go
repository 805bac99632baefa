package cli

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/internal/mounts"
)

// demoMounts lists the intentfs mounts whose source is under dir.
func demoMounts(dir string) []string {
	var out []string
	live, _ := mounts.IntentfsMounts()
	for _, m := range live {
		if strings.HasPrefix(m.Source, dir+"/") {
			out = append(out, m.Mountpoint)
		}
	}
	return out
}

// shortTempDir is a temporary directory with a short path: the demo's
// control socket lives below it, and a socket's path is bounded.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "ifdemo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range demoMounts(dir) {
			syscall.Unmount(m, syscall.MNT_DETACH)
		}
		os.RemoveAll(dir)
	})
	return dir
}

// assertDemoCleanedUp fails when the demo left its workspace mounted or
// its directory behind.
func assertDemoCleanedUp(t *testing.T, tmp, out string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(demoMounts(tmp)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := demoMounts(tmp); len(left) > 0 {
		t.Fatalf("the demo left %v mounted; its output:\n%s", left, out)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "intentfs-demo-*")); len(left) > 0 {
		t.Errorf("the demo left its directory %v", left)
	}
}

// TestDemoUnmountsWhenItsReaderGoes: `intentfs demo | head` closes the
// demo's stdout early; the demo takes the failed write as its end and
// unmounts, instead of dying of SIGPIPE with its workspace mounted.
func TestDemoUnmountsWhenItsReaderGoes(t *testing.T) {
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	c := testenv.NewCLI(t)
	tmp := shortTempDir(t)
	cmd := exec.Command("sh", "-c", `"$INTENTFS" demo | head -n 1`)
	cmd.Env = append(os.Environ(), "INTENTFS="+c.Bin, "TMPDIR="+tmp, "INTENTFS_RUNTIME_DIR="+c.Runtime)
	out, _ := cmd.CombinedOutput()
	if !strings.HasPrefix(string(out), "intentfs demo in "+tmp) || strings.Contains(string(out), "intentfs demo:") {
		t.Fatalf("the demo did not run:\n%s", out)
	}
	assertDemoCleanedUp(t, tmp, string(out))
}

// TestDemoUnmountsOnSignal: a demo stopped by SIGTERM or SIGINT while
// mounted (here blocked writing to a full pipe) unmounts before it exits.
func TestDemoUnmountsOnSignal(t *testing.T) {
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	c := testenv.NewCLI(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := shortTempDir(t)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var stderr bytes.Buffer
			cmd := exec.Command(c.Bin, "demo")
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "INTENTFS_RUNTIME_DIR="+c.Runtime)
			cmd.Stdout, cmd.Stderr = w, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var seen strings.Builder
			lines := bufio.NewReader(r)
			for !strings.Contains(seen.String(), "2. Mounted") {
				l, err := lines.ReadString('\n')
				seen.WriteString(l)
				if err != nil {
					t.Fatalf("reading the demo: %v\n%s%s", err, seen.String(), stderr.String())
				}
			}
			// Fill the pipe: the demo's next write blocks, mounted.
			fd := int(w.Fd())
			if err := syscall.SetNonblock(fd, true); err != nil {
				t.Fatal(err)
			}
			filler := make([]byte, 4096)
			for {
				if _, err := syscall.Write(fd, filler); errors.Is(err, syscall.EAGAIN) {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
			if len(demoMounts(tmp)) == 0 {
				t.Fatalf("the demo is not mounted after %q", seen.String())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("the demo did not exit on %v", sig)
			}
			w.Close()
			assertDemoCleanedUp(t, tmp, seen.String()+stderr.String())
		})
	}
}
