package fence

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
	"github.com/intentfs/intentfs/ledger"
)

// openGoneScript opens src/gone.txt and src/over.txt for reading, removes
// the first and renames src/new.txt over the second, then prints, for
// each descriptor, the link count and size fstat(2) reports and what a
// read from the start returns.
const openGoneScript = `
import os
def show(name, fd):
    st = os.fstat(fd)
    print(name, st.st_nlink, st.st_size, os.pread(fd, 100, 0).decode().strip())
a = os.open("src/gone.txt", os.O_RDONLY)
b = os.open("src/over.txt", os.O_RDONLY)
os.unlink("src/gone.txt")
os.rename("src/new.txt", "src/over.txt")
show("gone", a)
show("over", b)
`

// TestCachedPathOpenFileOutlivesItsName: a file open for reading keeps
// its content and its attributes, with no link left, once its name is
// removed or renamed over, as on a disk. On the cached data path the
// daemon holds no handle of the open (the kernel sends no OPEN), and the
// removal keeps the pre-image, linked into the store: neither may show.
func TestCachedPathOpenFileOutlivesItsName(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/gone.txt": "gone content\n", "src/over.txt": "over content\n", "src/new.txt": "new\n"})
	out := cachedAgent(e, "/usr/bin/python3 "+testenv.WorldReadable(t, "gone.py", openGoneScript))
	want := "gone 0 13 gone content\nover 0 13 over content\n"
	if out != want {
		t.Fatalf("descriptors of removed files:\n%s\nwant:\n%s", out, want)
	}
	// The removal and the rename are recorded with their pre-images.
	e.WaitRecord("unlink", testenv.Event(ledger.EventDelete, "src/gone.txt"))
	e.WaitRecord("rename", testenv.Event(ledger.EventRename, "src/over.txt"))
}

// TestCachedPathLocksStayInTheMount: on the cached data path no handle
// holds a lock at the source, so the kernel keeps flock and fcntl locks
// itself, among the mount's users: they exclude each other there, as on
// a disk, and never reach the source, where the daemon and the humans'
// commands lock (an agent cannot make them wait). A process's own POSIX
// locks never conflict with each other, as on a disk.
func TestCachedPathLocksStayInTheMount(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/lock": ""})
	holder := testenv.CommandIn(e.Mnt, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "flock", "-x", "src/lock", "-c", "echo HELD; read x || true")
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var hout testenv.SyncBuffer
	holder.Stdout, holder.Stderr = &hout, &hout
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); holder.Wait() })
	testenv.WaitFor(t, func() bool { return strings.Contains(hout.String(), "HELD") }, "the agent's flock through the mount")

	for _, lock := range []string{"flock -n -x src/lock true", "flock -n -s src/lock true", "flock -n -x -F src/lock true"} {
		if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, lock); err == nil {
			t.Errorf("%s through the mount succeeded while another process holds an exclusive flock:\n%s", lock, out)
		}
	}
	// At the source the lock is free: the human's commands do not wait.
	if out, err := exec.Command("flock", "-n", "-x", filepath.Join(e.Src, "src/lock"), "true").CombinedOutput(); err != nil {
		t.Errorf("flock on the source while the agent holds one through the mount: %v\n%s", err, out)
	}
	stdin.Close()
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v\n%s", err, hout.String())
	}

	// fcntl locks of one process on two descriptors of a file: the same
	// owner, so no conflict (the passthrough path holds each handle's
	// lock at the source, where they do conflict).
	f1, err := os.OpenFile(filepath.Join(e.Mnt, "src/lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f1.Close()
	f2, err := os.OpenFile(filepath.Join(e.Mnt, "src/lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	if err := syscall.FcntlFlock(f1.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK}); err != nil {
		t.Fatalf("fcntl write lock: %v", err)
	}
	if err := syscall.FcntlFlock(f2.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_RDLCK}); err != nil {
		t.Errorf("fcntl read lock of the same process on a second descriptor: %v, want success (POSIX locks belong to the process)", err)
	}
}
