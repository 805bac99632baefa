package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A placer that has placed many short processes holds pidfds only for
// those still running: exited ones are swept out, not kept until the
// cache fills.
func TestPlacerDropsExitedProcesses(t *testing.T) {
	p, err := newPlacer("/proc")
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	p.sweepAt = 4
	noSession := func(uint64) *Session { return nil }
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		if s, err := p.place(uint32(cmd.Process.Pid), noSession); s != nil || err != nil {
			t.Fatalf("placed in %v, %v; want no session", s, err)
		}
		return cmd
	}
	var exited []int
	for range 3 {
		cmd := start()
		exited = append(exited, p.byPid[uint32(cmd.Process.Pid)].pidfd)
		cmd.Process.Kill()
		cmd.Wait()
	}
	running := start()
	if n := len(p.byPid); n != 4 {
		t.Fatalf("the cache holds %d processes before the sweep, want 4", n)
	}
	start() // the fifth placement finds the cache at its sweep mark
	if n := len(p.byPid); n != 2 {
		t.Errorf("after the sweep the cache holds %d processes, want the 2 still running", n)
	}
	if _, ok := p.byPid[uint32(running.Process.Pid)]; !ok {
		t.Errorf("the sweep dropped a running process")
	}
	// Nothing opened a descriptor since the sweep, so the exited
	// processes' numbers are not reused yet: they must be closed.
	for _, fd := range exited {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
			t.Errorf("the pidfd %d of an exited process is still open (%v)", fd, err)
		}
	}
	if p.sweepAt != minSweep {
		t.Errorf("next sweep at %d, want %d", p.sweepAt, minSweep)
	}
}

// effectiveIDs reads the effective ids (the second column), which the
// namespace is then opened as; a status without them places nobody.
func TestEffectiveIDs(t *testing.T) {
	root := t.TempDir()
	write := func(pid, body string) {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "status"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("7", "Name:\tsh\nUid:\t1000\t1001\t1002\t1003\nGid:\t2000\t2001\t2002\t2003\nGroups:\t\n")
	write("8", "Name:\tsh\nUid:\t1000\t1001\t1002\t1003\n")
	write("9", "Name:\tsh\nUid:\t1000\nGid:\t2000\t2001\t2002\t2003\n")
	if uid, gid, err := effectiveIDs(root, 7); err != nil || uid != 1001 || gid != 2001 {
		t.Errorf("effectiveIDs = %d, %d, %v; want 1001, 2001", uid, gid, err)
	}
	for _, pid := range []uint32{8, 9, 10} {
		if _, _, err := effectiveIDs(root, pid); err == nil {
			t.Errorf("pid %d: no error for a status without both ids", pid)
		}
	}
}
