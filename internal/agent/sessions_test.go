package agent

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startInPidNS starts sh -c script as the first process of a new pid
// namespace (root only).
func startInPidNS(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make pid namespaces")
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// childOf waits for pid's first child and returns it.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		if f := strings.Fields(string(b)); len(f) > 0 {
			c, _ := strconv.Atoi(f[0])
			return c
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d started no child", pid)
	return 0
}

func TestSessionsPlacesSessionProcesses(t *testing.T) {
	ended := make(chan *Session, 4)
	r, err := NewSessions(nil, func(s *Session) { ended <- s })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if s, err := r.Place(uint32(os.Getpid())); s != nil || err != nil {
		t.Fatalf("with no session, the test process placed as %v, %v", s, err)
	}
	// A child in a nested pid namespace of its own (unshare -p) stays the
	// session's.
	root := startInPidNS(t, "unshare -pf sleep 30 & sleep 30")
	s, err := r.Start(Spec{Name: "a", User: "u", RootPid: root.Process.Pid, Intent: "INT-001", Pinned: true})
	if err != nil {
		t.Fatal(err)
	}
	unshare := childOf(t, root.Process.Pid)
	nested := childOf(t, unshare)
	tests := []struct {
		name string
		pid  int
		want *Session
	}{
		{"the test process", os.Getpid(), nil},
		{"the root", root.Process.Pid, s},
		{"a child", unshare, s},
		{"a child in a nested pid namespace", nested, s},
	}
	for _, tt := range tests {
		got, err := r.Place(uint32(tt.pid))
		if err != nil || got != tt.want {
			t.Errorf("%s (pid %d): placed in %v, %v; want %v", tt.name, tt.pid, got, err, tt.want)
		}
	}
	// A namespace that is not a child of the daemon's, or a process that
	// is not the first of its namespace, is not a session.
	if _, err := r.Start(Spec{RootPid: unshare}); err == nil {
		t.Errorf("a non-first process was made a session")
	}
	if _, err := r.Start(Spec{RootPid: os.Getpid()}); err == nil {
		t.Errorf("the daemon's own namespace was made a session")
	}

	// Claims: one holder unless shared.
	other := startInPidNS(t, "sleep 30")
	s2, err := r.Start(Spec{Name: "b", User: "v", RootPid: other.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Claim(s, "INT-001", false); err != nil {
		t.Fatal(err)
	}
	if err := r.Claim(s2, "INT-001", false); !errors.Is(err, ErrClaimed) || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("second claim: %v", err)
	}
	if err := r.Claim(s2, "INT-001", true); err != nil {
		t.Errorf("a shared claim: %v", err)
	}

	// The end: the root exits, the session ends once, its claim goes.
	root.Process.Kill()
	root.Wait()
	select {
	case e := <-ended:
		if e != s {
			t.Errorf("ended %v, want %v", e.ID(), s.ID())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not end")
	}
	if h := r.Holder("INT-001"); h != nil {
		t.Errorf("the ended session still holds INT-001")
	}
	if err := r.Claim(s2, "INT-001", false); err != nil {
		t.Errorf("claim after the holder ended: %v", err)
	}
	list := r.List()
	if len(list) != 2 || list[0].ID != s2.ID() || list[1].ID != s.ID() || list[1].Live || list[1].Ended == nil {
		t.Errorf("list = %+v", list)
	}
}

func TestVersionsStale(t *testing.T) {
	vs := newVersions()
	v1 := Version{Ino: 1, Size: 3, Mtime: 10, Ctime: 10}
	v2 := Version{Ino: 1, Size: 4, Mtime: 11, Ctime: 11}
	tests := []struct {
		name  string
		setup func()
		path  string
		cur   Version
		stale bool
	}{
		{"never seen", func() {}, "a", v1, false},
		{"same version", func() { vs.Saw("a", v1) }, "a", v1, false},
		{"changed since", func() {}, "a", v2, true},
		{"being written by the session itself", func() { vs.Opened("a") }, "a", v2, false},
		{"closed: its own version", func() { vs.Closed("a", &v2) }, "a", v2, false},
		{"forgotten", func() { vs.Forget("a") }, "a", v1, false},
	}
	for _, tt := range tests {
		tt.setup()
		if _, stale := vs.Stale(tt.path, tt.cur); stale != tt.stale {
			t.Errorf("%s: stale = %v", tt.name, stale)
		}
	}
	for i := range maxVersions + 10 {
		vs.Saw(strconv.Itoa(i), v1)
	}
	if n := vs.Len(); n > maxVersions {
		t.Errorf("%d versions kept, bound %d", n, maxVersions)
	}
}
