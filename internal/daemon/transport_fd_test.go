package daemon

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestMountLeaksNoDescriptorToChildren mounts over /dev/fuse again and
// again while another goroutine starts programs, as the daemon starts git
// while a mount comes up and as tests mount in parallel. A descriptor the
// mount opens inside itself without close-on-exec is inherited by such a
// program, and the mount stays busy (EBUSY at unmount) for as long as the
// program lives.
func TestMountLeaksNoDescriptorToChildren(t *testing.T) {
	requireMount(t)
	base := t.TempDir()
	stop := make(chan struct{})
	var (
		mu     sync.Mutex
		leaked []string
		wg     sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// The child lists its own descriptors: any above stdio
			// came from this process without close-on-exec.
			out, err := exec.Command("find", "/proc/self/fd/", "-mindepth", "1", "(", "-lname", "*epoll-hack*", "-o", "-lname", "/dev/fuse", ")").Output()
			if err == nil && strings.TrimSpace(string(out)) != "" {
				mu.Lock()
				leaked = append(leaked, strings.TrimSpace(string(out)))
				mu.Unlock()
			}
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		mnt := filepath.Join(base, "m", strings.Repeat("x", i%3+1)+string(rune('a'+i%26)))
		if err := os.MkdirAll(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		s, _, err := mountDev(mnt, fuse.NewDefaultRawFileSystem(), &fuse.MountOptions{Name: "intentfs-test", DirectMount: true})
		if err != nil {
			t.Fatalf("mount %s: %v", mnt, err)
		}
		if err := s.Unmount(); err != nil {
			t.Fatalf("unmount %s: %v", mnt, err)
		}
	}
	close(stop)
	wg.Wait()
	if len(leaked) > 0 {
		t.Errorf("a program started while a mount came up inherited a descriptor into the mount: %q", leaked)
	}
}

// requireMount skips a test that mounts where this process cannot, and
// fails it instead under INTENTFS_REQUIRE_FUSE=1 (CI).
func requireMount(t *testing.T) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "mounting needs root"
	} else if _, err := os.Stat("/dev/fuse"); err != nil {
		why = "no /dev/fuse: " + err.Error()
	}
	if why == "" {
		return
	}
	if os.Getenv("INTENTFS_REQUIRE_FUSE") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}
