package fuseuring

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// mountLoopback serves a loopback of a new directory over io_uring.
func mountLoopback(t *testing.T, o Options) (src, mnt string, s *Server) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("INTENTFS_REQUIRE_FUSE") == "1" && os.Getenv("INTENTFS_TRANSPORT") == "uring" {
			t.Fatalf("FUSE over io_uring is required here: %v", err)
		}
		t.Skipf("FUSE over io_uring is not available: %v", err)
	}
	src, mnt = t.TempDir(), t.TempDir()
	root, err := fs.NewLoopbackRoot(src)
	if err != nil {
		t.Fatal(err)
	}
	sec := time.Second
	raw := fs.NewNodeFS(root, &fs.Options{EntryTimeout: &sec, AttrTimeout: &sec})
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	s, err = Mount(mnt, raw, &fuse.MountOptions{Name: "uringtest", FsName: src}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
			s.Wait()
		}
	})
	if !s.Ring() {
		t.Fatal("the kernel did not take the ring")
	}
	return src, mnt, s
}

func TestFilesThroughTheRing(t *testing.T) {
	src, mnt, _ := mountLoopback(t, Options{})
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: several max-size requests
	if err := os.WriteFile(filepath.Join(mnt, "big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(src, "big")); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("the source holds %d bytes (%v), want the %d written", len(got), err, len(big))
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "big")); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(big))
	}
	if err := os.MkdirAll(filepath.Join(mnt, "a/b/c"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(mnt, "a/b/c", "f"+strings.Repeat("x", i%50)+string(rune('a'+i%26))), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(filepath.Join(mnt, "a/b/c"))
	if err != nil || len(ents) == 0 {
		t.Fatalf("listing: %d entries, %v", len(ents), err)
	}
	if err := os.Symlink("big", filepath.Join(mnt, "link")); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(mnt, "link")); err != nil || target != "big" {
		t.Fatalf("readlink = %q, %v", target, err)
	}
	if err := os.Rename(filepath.Join(mnt, "big"), filepath.Join(mnt, "big2")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "big2")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(mnt, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("removed directory still in the source: %v", err)
	}
	if err := syscall.Setxattr(filepath.Join(mnt, "big2"), "user.k", []byte("value"), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := syscall.Getxattr(filepath.Join(mnt, "big2"), "user.k", buf); err != nil || string(buf[:n]) != "value" {
		t.Fatalf("getxattr = %q, %v", buf[:n], err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat of a missing file: %v, want ENOENT", err)
	}
}

// TestParallelRequestsGrowTheQueues: more concurrent callers than
// entries; every one is served, and the queues grew.
func TestParallelRequestsGrowTheQueues(t *testing.T) {
	_, mnt, s := mountLoopback(t, Options{EntriesPerQueue: 1, MaxEntriesPerQueue: 8})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 16 {
		wg.Go(func() {
			dir := filepath.Join(mnt, "w"+string(rune('a'+w)))
			if err := os.Mkdir(dir, 0o755); err != nil {
				errs <- err
				return
			}
			for i := range 50 {
				p := filepath.Join(dir, string(rune('a'+i%26))+string(rune('a'+i/26)))
				if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
					errs <- err
					return
				}
				if _, err := os.Stat(p); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := 0
	for _, q := range s.queues {
		q.mu.Lock()
		total += q.entries
		if q.entries > 8 {
			t.Errorf("queue %d has %d entries, more than the bound 8", q.qid, q.entries)
		}
		q.mu.Unlock()
	}
	if total <= len(s.queues) {
		t.Errorf("%d entries for %d queues: no queue grew under 16 parallel callers", total, len(s.queues))
	}
}

// TestUnmountUnderLoad: unmounting while callers keep working ends the
// transport; no goroutine is left waiting.
func TestUnmountUnderLoad(t *testing.T) {
	_, mnt, s := mountLoopback(t, Options{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := filepath.Join(mnt, string(rune('a'+w)))
				_ = os.WriteFile(p, []byte("x"), 0o644)
				_, _ = os.Stat(p)
			}
		})
	}
	time.Sleep(100 * time.Millisecond) // let the load start
	// Lazily, as an admin would with busy files: the connection ends
	// once the last caller lets go.
	if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	done := make(chan struct{})
	go func() { s.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the transport did not stop after the unmount")
	}
}

// TestKilledDaemon: a daemon killed with SIGKILL leaves a mount that
// fails (ENOTCONN) instead of hanging its callers.
func TestKilledDaemon(t *testing.T) {
	if os.Getenv("FUSEURING_CHILD_MOUNT") != "" {
		_, mnt, _ := mountLoopback(t, Options{})
		os.Stdout.WriteString(mnt + "\n")
		select {} // serve until killed
	}
	if err := Available(); err != nil {
		mountLoopback(t, Options{}) // skips or fails as the others do
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledDaemon$", "-test.v")
	cmd.Env = append(os.Environ(), "FUSEURING_CHILD_MOUNT=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var mnt string
	deadline := time.Now().Add(30 * time.Second)
	var acc []byte
	for mnt == "" && time.Now().Before(deadline) {
		n, err := out.Read(buf)
		acc = append(acc, buf[:n]...)
		for _, line := range strings.Split(string(acc), "\n") {
			if strings.HasPrefix(line, "/") {
				mnt = strings.TrimSpace(line)
			}
		}
		if err != nil {
			break
		}
	}
	if mnt == "" {
		_ = cmd.Process.Kill()
		t.Fatalf("the child did not mount: %s", acc)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("x"), 0o644); err != nil {
		t.Fatalf("the child's mount does not work: %v", err)
	}
	// Callers keep the daemon busy when it dies: every one of them must
	// return (with an error), none may hang.
	stop := make(chan struct{})
	var workers sync.WaitGroup
	var worked atomic.Int64
	for w := range 8 {
		workers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := filepath.Join(mnt, fmt.Sprintf("w%d-%d", w, i%20))
				if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
					return // the mount is gone
				}
				worked.Add(1)
				_, _ = os.Stat(p)
			}
		})
	}
	for start := time.Now(); worked.Load() < 100; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			_ = cmd.Process.Kill()
			t.Fatalf("the callers made %d writes in 10 s before the kill", worked.Load())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	finished := make(chan struct{})
	go func() { workers.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		close(stop)
		t.Fatal("callers working on the mount hang after its daemon was killed")
	}
	// Requests end with the error of the path that stopped them:
	// ECANCELED (made while the kernel was still tearing down the dead
	// daemon's rings: the entry's task was dead), ECONNABORTED (the
	// connection was aborted) or ENOTCONN (it is gone).
	want := []error{syscall.ENOTCONN, syscall.ECANCELED, syscall.ECONNABORTED}
	for i := range 3 {
		done := make(chan error, 1)
		go func() { _, err := os.Stat(filepath.Join(mnt, "f")); done <- err }()
		select {
		case err := <-done:
			ok := false
			for _, w := range want {
				ok = ok || errors.Is(err, w)
			}
			if !ok {
				t.Fatalf("stat %d on the dead mount: %v, want one of %v", i+1, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("stat on the mount of a killed daemon hangs")
		}
	}
}

// TestEntriesHoldNoDescriptors: a ring entry's io_uring is registered
// with its thread and its descriptor closed, so however many entries the
// queues have, the transport holds only its /dev/fuse descriptors, and
// the daemon's descriptor limit is left to what it bounds (cached
// directory descriptors, open handles).
func TestEntriesHoldNoDescriptors(t *testing.T) {
	if err := Available(); err != nil {
		mountLoopback(t, Options{}) // skips or fails as the others do
	}
	before := countFds(t)
	const perQueue = 6
	_, _, s := mountLoopback(t, Options{EntriesPerQueue: perQueue, MaxEntriesPerQueue: perQueue})
	entries := 0
	for _, q := range s.queues {
		q.mu.Lock()
		entries += len(q.live)
		q.mu.Unlock()
	}
	if entries != perQueue*len(s.queues) {
		t.Fatalf("%d entries registered, want %d", entries, perQueue*len(s.queues))
	}
	// /dev/fuse and go-fuse's duplicate of it, and a spare for the
	// runtime's own (an epoll descriptor the first time one is needed).
	if added := countFds(t) - before; added > 3 {
		t.Fatalf("the mount added %d descriptors for %d entries; want at most 3", added, entries)
	}
}

func countFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestIdleMountDoesNotWake: the stall watch looks at the entries only
// while one answers a request; an idle mount costs no wakeups (it looked
// twenty times a second before).
func TestIdleMountDoesNotWake(t *testing.T) {
	src, mnt, s := mountLoopback(t, Options{})
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil {
		t.Fatal(err)
	}
	// The requests are answered; give the watch its last look.
	deadline := time.Now().Add(5 * time.Second)
	for s.answering.Load() != 0 || s.kicking() {
		if time.Now().After(deadline) {
			t.Fatal("entries still answering after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * DefaultLongWait)
	before := s.looks.Load()
	// Ten look periods of an idle mount.
	time.Sleep(10 * DefaultLongWait / 2)
	if after := s.looks.Load(); after != before {
		t.Fatalf("the idle mount's stall watch looked %d times in %v", after-before, 10*DefaultLongWait/2)
	}
}
