package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/mounts"
)

// noMountError means no running mount matched (exit 3).
type noMountError struct{ err error }

func (e noMountError) Error() string { return e.err.Error() }
func (e noMountError) Unwrap() error { return e.err }

// uncontrolledMountError means the kernel shows an intentfs mount that
// this user's registry does not list: another user's (the registry is
// private to its owner), or one whose daemon died (exit 1).
type uncontrolledMountError struct {
	mount mounts.KernelMount
	// dead is why the mount does not answer, if its daemon is gone.
	dead error
}

func (e uncontrolledMountError) Error() string {
	if e.dead != nil {
		return fmt.Sprintf("%s is an intentfs mount (of %s) whose daemon is gone (%v); unmount it with: intentfs unmount %s",
			e.mount.Mountpoint, e.mount.Source, e.dead, e.mount.Mountpoint)
	}
	return fmt.Sprintf("%s is an intentfs mount (of %s) that uid %d may not control: it is not in this user's registry %s "+
		"(another user started it, or with another INTENTFS_RUNTIME_DIR); `intentfs status` shows it read-only, and the agent interface (%s/.intentfs/) works as for any agent",
		e.mount.Mountpoint, e.mount.Source, os.Geteuid(), mounts.RuntimeDir(), e.mount.Mountpoint)
}

// findMount resolves --mount, the current directory, or the only mount.
// When this user's registry has no match but the kernel shows an
// intentfs mount that fits, it says so instead of "no mount".
func findMount(mountpoint string) (mounts.Entry, error) {
	cwd, _ := os.Getwd()
	e, err := mounts.DefaultRegistry().Find(mountpoint, cwd)
	if err == nil {
		return e, nil
	}
	m, ok, others := unlistedMount(mountpoint, cwd)
	if ok {
		return e, uncontrolledMountError{mount: m, dead: deadMount(m.Mountpoint)}
	}
	if len(others) > 0 {
		err = fmt.Errorf("%w\nthe kernel shows intentfs mounts this user's registry %s does not list (another user's, or of a daemon that died); name one with --mount:%s",
			err, mounts.RuntimeDir(), describeKernelMounts(others))
	}
	return e, noMountError{err}
}

// maxMountsNamed bounds the mounts an error message lists.
const maxMountsNamed = 5

func describeKernelMounts(found []mounts.KernelMount) string {
	var b strings.Builder
	for i, m := range found {
		if i == maxMountsNamed {
			fmt.Fprintf(&b, "\n  and %d more", len(found)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s (of %s)", escapeTerminal(m.Mountpoint), escapeTerminal(m.Source))
	}
	return b.String()
}

// unlistedMount picks, among the kernel's intentfs mounts that this
// user's registry does not list, the one at mountpoint, else the one
// containing cwd. If none fits, it returns them all, to be named: it
// never guesses which one was meant.
func unlistedMount(mountpoint, cwd string) (_ mounts.KernelMount, found bool, unlisted []mounts.KernelMount) {
	kernel, _ := mounts.IntentfsMounts()
	listed, _ := mounts.DefaultRegistry().List()
	for _, m := range kernel {
		known := false
		for _, e := range listed {
			known = known || e.Mountpoint == m.Mountpoint
		}
		if !known {
			unlisted = append(unlisted, m)
		}
	}
	if mountpoint != "" {
		abs, err := filepath.Abs(mountpoint)
		if err != nil {
			return mounts.KernelMount{}, false, nil
		}
		for _, m := range unlisted {
			if m.Mountpoint == abs {
				return m, true, nil
			}
		}
		return mounts.KernelMount{}, false, nil
	}
	for _, m := range unlisted {
		if cwd == m.Mountpoint || strings.HasPrefix(cwd, m.Mountpoint+"/") {
			return m, true, nil
		}
	}
	return mounts.KernelMount{}, false, unlisted
}

// deadMount returns why a mount does not answer if its daemon is gone:
// the kernel then fails every request with ENOTCONN.
func deadMount(mountpoint string) error {
	var st syscall.Stat_t
	if err := syscall.Stat(mountpoint, &st); errors.Is(err, syscall.ENOTCONN) {
		return err
	}
	return nil
}

// daemonGone reports whether a failed call means the daemon is not there
// any more: its socket refuses connections or was removed.
func daemonGone(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)
}

// timedOut says err is a call's deadline passing: while connecting (the
// context's) or while waiting for the answer (the connection's).
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
}

// call sends a request to a mount's daemon.
func call(e mounts.Entry, req control.Request) (*control.Response, error) {
	if u, err := user.Current(); err == nil {
		req.User = u.Username
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := control.Call(ctx, e.Socket, req)
	if err != nil && resp == nil && timedOut(err) {
		return nil, errors.New("the daemon did not answer within 60s")
	}
	if err != nil && resp == nil && daemonGone(err) && req.Op != "unmount" {
		return nil, fmt.Errorf("the daemon of %s (pid %d) does not answer (%v): it has died; unmount it with: intentfs unmount %s", e.Mountpoint, e.Pid, err, e.Mountpoint)
	}
	return resp, err
}

// withSudoHint turns the error of a command a human runs against a mount
// this user may not control (the team setup's daemon runs as root) into
// one that names the command that works: the same, as the daemon's user,
// with --mount. retry is that command's line after "intentfs ", with
// --mount M added here. Other errors pass unchanged.
func withSudoHint(err error, retry string) error {
	var u uncontrolledMountError
	if !errors.As(err, &u) || u.dead != nil {
		return err
	}
	return fmt.Errorf("%s is served by a daemon that uid %d may not control (it was mounted as another user, usually root with sudo): run sudo intentfs %s",
		escapeTerminal(u.mount.Source), os.Geteuid(), strings.Replace(retry, "{mount}", "--mount "+escapeTerminal(u.mount.Mountpoint), 1))
}

// uncontrolledMountOf reports the live intentfs mount of source that this
// user's registry does not list, as an uncontrolledMountError; nil if
// there is none. A command that would otherwise work on the source
// offline asks first: the mount's lock would refuse it with "unmount it
// first", which is the wrong advice for a human beside a running agent.
func uncontrolledMountOf(source string) error {
	_, _, unlisted := unlistedMount("", "")
	for _, m := range unlisted {
		if m.Source == source && deadMount(m.Mountpoint) == nil {
			return uncontrolledMountError{mount: m}
		}
	}
	return nil
}
