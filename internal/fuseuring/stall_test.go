package fuseuring

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// holdingRoot is a root directory whose "hold*" files' attributes take
// until release is closed (as a change held for approval does), and
// whose other files answer at once.
type holdingRoot struct {
	fs.Inode
	release chan struct{}
	holding atomic.Int32
}

type holdingFile struct {
	fs.Inode
	root *holdingRoot
	hold bool
}

func (r *holdingRoot) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	out.Mode = syscall.S_IFREG | 0o644
	return r.NewInode(ctx, &holdingFile{root: r, hold: strings.HasPrefix(name, "hold")}, fs.StableAttr{Mode: syscall.S_IFREG}), 0
}

func (f *holdingFile) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o644
	if !f.hold {
		return 0
	}
	f.root.holding.Add(1)
	defer f.root.holding.Add(-1)
	select {
	case <-f.root.release:
		return 0
	case <-ctx.Done():
		return syscall.EINTR
	}
}

// statOnCPU stats path from a thread that runs on cpu only, so that its
// requests go to that CPU's queue.
func statOnCPU(cpu int, path string) error {
	errs := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: the pinned thread ends with the goroutine
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			errs <- err
			return
		}
		var st unix.Stat_t
		errs <- unix.Stat(path, &st)
	}()
	return <-errs
}

// TestLongWaitsDoNotStallTheirQueue: a burst of requests that all wait
// (changes held for approval) on one CPU's queue. Each reaches the
// daemon while the others still wait, and a request made after them is
// answered at once. Without the stall watch, the requests that arrived
// while the queue had no free entry waited in the kernel until one of
// the waits ended: a new entry does not take them, only a commit does.
func TestLongWaitsDoNotStallTheirQueue(t *testing.T) {
	for _, tc := range []struct {
		name string
		// registerDelay: how long each added entry takes to register.
		// On a loaded machine it is slow, and every kick under way can
		// land in the queue's list behind the waits.
		registerDelay time.Duration
	}{
		{"entries register at once", 0},
		{"entries register slowly", 60 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) { testLongWaits(t, tc.registerDelay) })
	}
}

func testLongWaits(t *testing.T, registerDelay time.Duration) {
	if err := Available(); err != nil {
		mountLoopback(t, Options{}) // skips or fails as the others do
	}
	mnt := t.TempDir()
	root := &holdingRoot{release: make(chan struct{})}
	zero := time.Duration(0)
	raw := fs.NewNodeFS(root, &fs.Options{EntryTimeout: &zero, AttrTimeout: &zero})
	s, err := Mount(mnt, raw, &fuse.MountOptions{Name: "uringhold"}, Options{EntriesPerQueue: 1, MaxEntriesPerQueue: 64, LongWait: 50 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	var released sync.Once
	release := func() { released.Do(func() { close(root.release) }) }
	t.Cleanup(func() {
		release()
		if err := s.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	if !s.Ring() {
		t.Fatal("the kernel did not take the ring")
	}
	s.registerDelay.Store(int64(registerDelay))
	const cpu, holds = 0, 40
	var wg sync.WaitGroup
	errs := make(chan error, holds)
	for i := range holds {
		wg.Go(func() {
			if err := statOnCPU(cpu, filepath.Join(mnt, fmt.Sprintf("hold%02d", i))); err != nil {
				errs <- err
			}
		})
	}
	// Each wait may need an entry that registers before its kick.
	patience := 10*time.Second + holds*4*registerDelay
	deadline := time.Now().Add(patience)
	for root.holding.Load() < holds {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d waiting requests reached the daemon in %s; the rest are stuck in the kernel's queue", root.holding.Load(), holds, patience)
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	if err := statOnCPU(cpu, filepath.Join(mnt, "free")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a request behind %d waiting ones took %s", holds, took)
	}
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a held stat: %v", err)
	}
}
