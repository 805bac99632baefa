package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/procinfo"
)

func unmountCmd() *command {
	return &command{
		name: "unmount", summary: "flush the ledger and unmount", usage: "[MOUNTPOINT]",
		help: `Asks the daemon to unmount; returns once the ledger is flushed to disk and the
mount is gone. Without MOUNTPOINT: the mount containing the current
directory, else the only mount running.

If the daemon is gone (killed, crashed), the mount is unmounted by the
kernel (umount as root, fusermount3 -u otherwise) and its registry entry
removed; records the daemon had not written are lost (intentfs verify
shows what the ledger lacks). If the mount is busy, the processes that hold
it are listed; --lazy detaches it at once, and the daemon finishes when the
last of them lets go.

Examples:
  intentfs unmount /workspace
  intentfs unmount
  intentfs unmount --lazy /workspace     # busy: detach now, finish later`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint (same as the argument)")
			fs.Bool("lazy", false, "if the mount is busy, detach it now (umount -l); the daemon ends when it is no longer used")
		},
		run: runUnmount,
	}
}

func runUnmount(a *app, args []string) error {
	mnt, _ := a.fs.GetString("mount")
	lazy, _ := a.fs.GetBool("lazy")
	if len(args) > 1 {
		return usagef("expected at most one MOUNTPOINT")
	}
	if len(args) == 1 {
		mnt = args[0]
	}
	e, err := findMount(mnt)
	var unlisted uncontrolledMountError
	switch {
	case errors.As(err, &unlisted) && unlisted.dead != nil:
		// The registry dropped the entry of a daemon that died; the
		// kernel still has its mount.
		return kernelUnmount(a, unlisted.mount.Mountpoint, unlisted.mount.Source, lazy, unlisted.dead)
	case err != nil:
		return err
	}
	if _, err := call(e, control.Request{Op: "unmount"}); err != nil {
		if daemonGone(err) {
			return kernelUnmount(a, e.Mountpoint, e.Source, lazy, err)
		}
		if _, mounted := mounts.IntentfsMountAt(e.Mountpoint); mounted {
			if scan := procinfo.Holders(e.Mountpoint); len(scan.Holders) > 0 || strings.Contains(err.Error(), "busy") {
				if lazy {
					return lazyDetach(a, e.Mountpoint, fmt.Sprintf("the daemon (pid %d) keeps serving the processes that still use it, and flushes the ledger and exits when the last lets go", e.Pid))
				}
				return busyError(e.Mountpoint, scan)
			}
		}
		return fmt.Errorf("%w%s", err, keptLog(e.Log))
	}
	// The daemon exits right after answering; wait briefly so a script
	// that runs next sees the registry without it.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && syscall.Kill(e.Pid, 0) == nil {
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(a.stdout, "unmounted %s; ledger flushed\n", e.Mountpoint)
	return nil
}

// kernelUnmount unmounts a mount whose daemon is gone, and removes what it
// left in the registry.
func kernelUnmount(a *app, mountpoint, source string, lazy bool, why error) error {
	fmt.Fprintf(a.stderr, "the daemon of %s does not answer (%v); unmounting through the kernel\n", mountpoint, why)
	err := unmountKernel(mountpoint, false)
	if errors.Is(err, syscall.EBUSY) {
		if !lazy {
			return busyError(mountpoint, procinfo.Holders(mountpoint))
		}
		err = unmountKernel(mountpoint, true)
	}
	if err != nil {
		return fmt.Errorf("unmounting %s: %w", mountpoint, err)
	}
	reg := mounts.DefaultRegistry()
	_, _, logPath := reg.Paths(mountpoint)
	reg.Unregister(mountpoint)
	fmt.Fprintf(a.stdout, "unmounted %s; its daemon was gone, so changes it had not yet written are not in the ledger (check with: intentfs verify --source %s)%s\n",
		mountpoint, source, keptLog(logPath))
	return nil
}

// lazyDetach detaches a busy mount from the tree at once.
func lazyDetach(a *app, mountpoint, after string) error {
	if err := unmountKernel(mountpoint, true); err != nil {
		return fmt.Errorf("detaching %s: %w", mountpoint, err)
	}
	fmt.Fprintf(a.stdout, "detached %s: it is gone from the tree; %s\n", mountpoint, after)
	return nil
}

// unmountKernel unmounts with umount(2) as root, else through the setuid
// fusermount3, as a user's FUSE mount must be; lazy detaches a busy
// mount (MNT_DETACH, fusermount3 -z).
func unmountKernel(mountpoint string, lazy bool) error {
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = unix.MNT_DETACH
		}
		return unix.Unmount(mountpoint, flags)
	}
	args := []string{"-u"}
	if lazy {
		args = append(args, "-z")
	}
	var stderr bytes.Buffer
	cmd := exec.Command("fusermount3", append(args, mountpoint)...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "busy") {
			return syscall.EBUSY
		}
		return fmt.Errorf("fusermount3 %s: %v: %s", strings.Join(args, " "), err, escapeTerminal(msg))
	}
	return nil
}

// busyError names the processes that keep a mount busy.
func busyError(mountpoint string, scan procinfo.HolderScan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is busy", mountpoint)
	if len(scan.Holders) == 0 {
		b.WriteString("; no process this user may inspect holds it")
	} else {
		b.WriteString("; these processes use it:")
	}
	for _, h := range scan.Holders {
		fmt.Fprintf(&b, "\n  pid %d %s: %s", h.Pid, escapeTerminal(h.Comm), escapeTerminal(strings.Join(h.Uses, "; ")))
	}
	if scan.More > 0 {
		fmt.Fprintf(&b, "\n  and %d more processes", scan.More)
	}
	if scan.Hidden > 0 && os.Geteuid() != 0 {
		fmt.Fprintf(&b, "\n  (%d processes of other users could not be inspected; root sees them all)", scan.Hidden)
	}
	fmt.Fprintf(&b, "\nend them or move them out of %s and run `intentfs unmount %s` again, or detach it now with: intentfs unmount --lazy %s",
		mountpoint, mountpoint, mountpoint)
	return errors.New(b.String())
}

// keptLog points at a daemon's log after something went wrong, if it is
// there.
func keptLog(logPath string) string {
	if logPath == "" {
		return ""
	}
	if _, err := os.Stat(logPath); err != nil {
		return ""
	}
	return "\nthe daemon's log is kept: " + filepath.Clean(logPath)
}
