package fuseuring

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// stallingRoot is a root directory whose "stall" file's attributes take
// until the request is interrupted.
type stallingRoot struct {
	fs.Inode
	interrupted chan struct{}
}

type stallingFile struct {
	fs.Inode
	root *stallingRoot
}

func (r *stallingRoot) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if name != "stall" {
		return nil, syscall.ENOENT
	}
	return r.NewInode(ctx, &stallingFile{root: r}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 2}), 0
}

func (f *stallingFile) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	select {
	case <-ctx.Done():
		close(f.root.interrupted)
		return syscall.EINTR
	case <-time.After(20 * time.Second):
		return 0
	}
}

// TestInterruptReachesARingRequest: the kernel sends INTERRUPT over
// /dev/fuse for a request it sent over the ring; the handler of that
// request sees its context cancelled, and the caller gets EINTR.
func TestInterruptReachesARingRequest(t *testing.T) {
	if err := Available(); err != nil {
		mountLoopback(t, Options{}) // skips or fails as the others do
	}
	mnt := t.TempDir()
	root := &stallingRoot{interrupted: make(chan struct{})}
	zero := time.Duration(0)
	raw := fs.NewNodeFS(root, &fs.Options{EntryTimeout: &zero, AttrTimeout: &zero})
	s, err := Mount(mnt, raw, &fuse.MountOptions{Name: "uringstall"}, Options{Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	if !s.Ring() {
		t.Fatal("the kernel did not take the ring")
	}
	tids := make(chan int, 1)
	result := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the thread is signalled by id; it dies with the goroutine
		tids <- unix.Gettid()
		var st unix.Stat_t
		result <- unix.Stat(filepath.Join(mnt, "stall"), &st)
	}()
	tid := <-tids
	// Signal the caller until the daemon sees the interrupt: the first
	// signal may come before its request is sent.
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-root.interrupted:
			select {
			case err := <-result:
				if !errors.Is(err, unix.EINTR) {
					t.Fatalf("the interrupted stat returned %v, want EINTR", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the interrupted stat did not return")
			}
			return
		case <-tick.C:
			// SIGURG: the Go runtime handles it (preemption), so it
			// interrupts the system call without ending the process.
			_ = unix.Tgkill(os.Getpid(), tid, unix.SIGURG)
		case <-deadline:
			t.Fatal("the daemon never saw the request interrupted")
		}
	}
}
