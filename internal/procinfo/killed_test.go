package procinfo

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestKilledStatus(t *testing.T) {
	for _, c := range []struct {
		name, status string
		want         bool
	}{
		{"running", "Name:\trm\nState:\tS (sleeping)\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n", false},
		{"sigkill to the thread", "State:\tS (sleeping)\nSigPnd:\t0000000000000100\nShdPnd:\t0000000000000000\n", true},
		{"sigkill to the process", "State:\tD (disk sleep)\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n", true},
		{"other signals pending", "State:\tS (sleeping)\nSigPnd:\t0000000000004002\nShdPnd:\t0000000000000001\n", false},
		{"zombie", "State:\tZ (zombie)\n", true},
		{"dead", "State:\tX (dead)\n", true},
		{"garbage", "State\nSigPnd:\tzz\n", false},
	} {
		if got := killedStatus([]byte(c.status)); got != c.want {
			t.Errorf("%s: killed %v, want %v", c.name, got, c.want)
		}
	}
}

// TestKilledSeesRealProcesses: a live process is not killed; once it is
// killed (a zombie until reaped) and once it is gone, it is.
func TestKilledSeesRealProcesses(t *testing.T) {
	if Killed(uint32(os.Getpid())) {
		t.Fatal("this test process is reported killed")
	}
	if Killed(0) {
		t.Fatal("tid 0 is reported killed")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	if Killed(pid) {
		t.Fatal("a sleeping child is reported killed")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !Killed(pid) {
		if time.Now().After(deadline) {
			t.Fatal("the killed child is not reported killed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Wait()
	if !Killed(pid) {
		t.Fatal("the reaped child is not reported killed")
	}
}
