package fsnode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFlushLeaksNoDescriptorToChildren: FLUSH closes a duplicate of the
// handle's descriptor (close(2) is what flushes); a duplicate made
// without close-on-exec is inherited by any process the daemon starts
// meanwhile (git for the gate and notes; in the tests, every test's
// commands), which then holds the open file, and a flock taken through
// the mount on it, for its whole life: the lock outlived its RELEASE and
// a later blocking lock waited forever.
func TestFlushLeaksNoDescriptorToChildren(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lockfile")
	if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	f := &File{LoopbackFile: nil, fd: fd}
	var children []*exec.Cmd
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c := exec.Command("sleep", "30")
			if c.Start() == nil {
				mu.Lock()
				children = append(children, c)
				mu.Unlock()
			}
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if errno := f.flushFd(context.Background()); errno != 0 {
			t.Fatalf("flush: %v", errno)
		}
	}
	close(stop)
	wg.Wait()
	defer func() {
		for _, c := range children {
			c.Process.Kill()
			c.Wait()
		}
	}()
	unix.Close(fd)
	fd2, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd2)
	if err := unix.Flock(fd2, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("the lock is still held after its descriptor was closed (a child of the flushes holds it): %v (%d children)", err, len(children))
	}
}
