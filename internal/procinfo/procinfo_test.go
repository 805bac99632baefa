package procinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/ledger"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		in    string
		comm  string
		start uint64
		ok    bool
	}{
		{"1234 (sed) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99887 20 21", "sed", 99887, true},
		{"1234 (a) b) (c) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 42 20", "a) b) (c", 42, true},
		{"garbage", "", 0, false},
		{"1 (x) S 1 2", "", 0, false},
	}
	for _, tt := range tests {
		st, ok := parseStat([]byte(tt.in))
		if st.comm != tt.comm || st.start != tt.start || ok != tt.ok {
			t.Errorf("parseStat(%q) = %+v %v", tt.in, st, ok)
		}
	}
	full := "1 (sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 500 20 21 22 4096 24 777 29"
	if st, ok := parseStat([]byte(full)); !ok || st.startCode != 4096 || st.startStack != 777 {
		t.Errorf("parseStat(%q) = %+v, want startcode 4096 and startstack 777", full, st)
	}
}

func TestLookupSelfAndReusedPid(t *testing.T) {
	c := NewCache()
	p := c.Lookup(uint32(os.Getpid()), 1, 2)
	exe, _ := os.Executable()
	if p.Comm == "" || len(p.Cmdline) == 0 || p.Exe != exe || p.Uid != 1 || p.Gid != 2 {
		t.Fatalf("self = %+v (exe %s)", p, exe)
	}

	// A fake /proc whose pid 7 is first "old" and then, with a new start
	// time, "new": the cache must not return the old description.
	root := t.TempDir()
	c = &Cache{procRoot: root, entries: map[image]*ledger.Process{}}
	write := func(comm, start string) {
		os.MkdirAll(filepath.Join(root, "7"), 0o755)
		os.WriteFile(filepath.Join(root, "7", "stat"), []byte("7 ("+comm+") S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 "+start+" 20"), 0o644)
		os.WriteFile(filepath.Join(root, "7", "cmdline"), []byte(comm+"\x00arg\x00"), 0o644)
	}
	write("old", "100")
	if got := c.Lookup(7, 0, 0); got.Comm != "old" || len(got.Cmdline) != 2 {
		t.Fatalf("first = %+v", got)
	}
	write("new", "200")
	if got := c.Lookup(7, 0, 0); got.Comm != "new" {
		t.Fatalf("reused pid attributed to %q", got.Comm)
	}
	if got := c.Lookup(99999999, 5, 6); got.Comm != "" || got.Uid != 5 {
		t.Fatalf("gone process = %+v", got)
	}
	// An exec keeps pid and start time: the new program must still be
	// named as itself.
	write("bash", "300")
	if got := c.Lookup(7, 0, 0); got.Comm != "bash" {
		t.Fatalf("before exec: %+v", got)
	}
	write("python3", "300")
	if got := c.Lookup(7, 0, 0); got.Comm != "python3" {
		t.Fatalf("after exec, named as %q", got.Comm)
	}
}

// TestLookupMidwayThroughExec reads a process whose exec has named it but
// not yet given it its arguments: that half-made description must not be
// what later lookups return.
func TestLookupMidwayThroughExec(t *testing.T) {
	root := t.TempDir()
	c := &Cache{procRoot: root, entries: map[image]*ledger.Process{}}
	dir := filepath.Join(root, "9")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stat := "9 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 300 20 21 22 4096 24 777 29"
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cmdline"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := c.Lookup(9, 0, 0); got.Comm != "sleep" || len(got.Cmdline) != 0 {
		t.Fatalf("midway = %+v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte("sleep\x005\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := c.Lookup(9, 0, 0); len(got.Cmdline) != 2 || got.Cmdline[1] != "5" {
		t.Fatalf("after the exec completed, the cache still returns %+v", got)
	}
}

// TestLookupAfterExec runs a shell that execs another program and checks
// the cache names the process by what runs now.
func TestLookupAfterExec(t *testing.T) {
	c := NewCache()
	cmd := exec.Command("sh", "-c", "read line; exec sleep 5")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := uint32(cmd.Process.Pid)
	if got := c.Lookup(pid, 0, 0); got.Comm != "sh" {
		t.Fatalf("before exec: comm %q", got.Comm)
	}
	in.Write([]byte("go\n"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := c.Lookup(pid, 0, 0)
		if got.Comm == "sleep" && got.Exe != "" && len(got.Cmdline) == 2 && got.Cmdline[0] == "sleep" {
			return
		}
		if comm, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "comm")); string(comm) == "sleep\n" && got.Comm == "sh" {
			// (Midway through the exec the name is sleep's before the
			// arguments are: that is not stale, and is read again.)
			t.Fatalf("after exec the cache names the process %+v", got)
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell did not exec sleep within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// BenchmarkLookupHit is the cost a traced change pays to name its process.
func BenchmarkLookupHit(b *testing.B) {
	c := NewCache()
	pid := uint32(os.Getpid())
	c.Lookup(pid, 0, 0)
	for b.Loop() {
		c.Lookup(pid, 0, 0)
	}
}

// lookupCached looks pid up until the cache keeps it. exec.Cmd.Start
// returns once the exec cannot fail, which is before the new program has
// its arguments, and a process read midway is not cached.
func lookupCached(t *testing.T, c *Cache, pid uint32, comm string) *ledger.Process {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		p := c.Lookup(pid, 0, 0)
		if p.Comm != comm {
			t.Fatalf("pid %d: comm %q, want %q", pid, p.Comm, comm)
		}
		c.mu.Lock()
		l, ok := c.byPid[pid]
		c.mu.Unlock()
		if ok && l.proc == p {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) was never cached", comm, pid)
		}
	}
}

func TestCacheNoticesExitAndReuse(t *testing.T) {
	c := NewCache()
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	first := lookupCached(t, c, pid, "sleep")
	if again := c.Lookup(pid, 0, 0); again != first {
		t.Fatal("a live process was not served from the cache")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if gone := c.Lookup(pid, 0, 0); gone == first || gone.Comm != "" {
		t.Fatalf("an exited process was still served from the cache: %+v", gone)
	}
}

// A cache that has seen many short processes holds descriptors only for
// those still running: exited ones are swept out, not kept until the
// cache fills.
func TestCacheDropsExitedProcesses(t *testing.T) {
	c := NewCache()
	c.sweepAt = 4
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		lookupCached(t, c, uint32(cmd.Process.Pid), "sleep")
		return cmd
	}
	var exited []*live
	for range 3 {
		cmd := start()
		exited = append(exited, c.byPid[uint32(cmd.Process.Pid)])
		cmd.Process.Kill()
		cmd.Wait()
	}
	running := start()
	if n := len(c.byPid); n != 4 {
		t.Fatalf("the cache holds %d processes before the sweep, want 4", n)
	}
	start() // the fifth insertion finds the cache at its sweep mark
	if n := len(c.byPid); n != 2 {
		t.Errorf("after the sweep the cache holds %d processes, want the 2 still running", n)
	}
	if _, ok := c.byPid[uint32(running.Process.Pid)]; !ok {
		t.Errorf("the sweep dropped a running process")
	}
	// Nothing opened a descriptor since the sweep, so the exited
	// processes' numbers are not reused yet: they must be closed.
	for _, l := range exited {
		for _, fd := range []int{l.pidfd, l.procDir} {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
				t.Errorf("descriptor %d of an exited process is still open (%v)", fd, err)
			}
		}
	}
	if c.sweepAt != minSweep {
		t.Errorf("next sweep at %d, want %d", c.sweepAt, minSweep)
	}
}
