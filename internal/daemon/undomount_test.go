package daemon

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// A Start that fails after mounting undoes its mount even while a process
// holds something in it (a program forked meanwhile that inherited a
// descriptor, another test's shell passing through): the unmount is busy,
// and the mount was left behind, served by a daemon whose ledger and
// lock were then closed.
func TestUndoMountOfABusyMount(t *testing.T) {
	requireMount(t)
	for _, transport := range []string{TransportDev, TransportAuto} {
		t.Run(transport, func(t *testing.T) {
			mnt := filepath.Join(t.TempDir(), "mnt")
			if err := os.Mkdir(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			var parent unix.Stat_t
			if err := unix.Stat(mnt, &parent); err != nil {
				t.Fatal(err)
			}
			s, _, err := mountTransport(transport, mnt, fuse.NewDefaultRawFileSystem(), &fuse.MountOptions{Name: "intentfs-test", DirectMount: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatalf("mount: %v", err)
			}
			// An O_PATH handle on the mount's root holds the mount
			// without a request to the filesystem.
			held, err := unix.Open(mnt, unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				s.Unmount()
				t.Fatal(err)
			}
			defer unix.Close(held)
			done := make(chan struct{})
			go func() { undoMount(s, mnt, slog.New(slog.NewTextHandler(io.Discard, nil))); close(done) }()
			select {
			case <-done:
			case <-time.After(undoMountWait + 10*time.Second):
				t.Fatal("undoMount did not return")
			}
			var st unix.Stat_t
			if err := unix.Stat(mnt, &st); err != nil || st.Dev != parent.Dev {
				unix.Unmount(mnt, unix.MNT_DETACH)
				t.Fatalf("the busy mount is still at %s (stat: %v, dev %d, the directory's %d)", mnt, err, st.Dev, parent.Dev)
			}
			if b, err := os.ReadFile("/proc/self/mountinfo"); err != nil || !strings.Contains(string(b), " - fusectl ") {
				t.Logf("fusectl is not mounted at %s: the connection cannot be aborted, nor the server's stop checked", fuseConnections)
				return
			}
			stopped := make(chan struct{})
			go func() { s.Wait(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatal("the mount's server still serves after undoMount")
			}
		})
	}
}
