// Package creds runs a filesystem call with a caller's credentials.
//
// The daemon serves every user of a mount as root. The kernel checks a
// caller's permissions (mode bits, and POSIX ACLs once the mount enables
// them) on the inode it resolved, but the daemon then acts on the source
// by name. Between the two, a rename can put another file under that
// name, and the daemon, as root, would act on it. Run closes that gap:
// the call runs on a locked OS thread whose filesystem uid and gid,
// supplementary groups and effective capabilities are the caller's, so
// the source's own permission checks apply to the file really reached,
// and root's privileges (DAC override, reserved blocks, immutable flags)
// do not.
//
// Only the current thread changes: setfsuid, setfsgid, setgroups and
// capset are per-thread system calls, issued raw here because the Go
// runtime's wrappers of some of them act on every thread of the process.
package creds

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Caller is who a call runs as.
type Caller struct {
	Uid, Gid uint32
	// Groups are the caller's supplementary groups.
	Groups []uint32
}

// Switcher runs calls as callers. The zero value is not usable; see New.
type Switcher struct {
	// enabled is false when the daemon is not root: then it serves only
	// its own user, and there is nothing to switch.
	enabled bool
	// own are the daemon's credentials, restored after each call.
	ownUid, ownGid uint32
	ownGroups      []uint32
	ownCaps        [2]unix.CapUserData
}

// New captures the daemon's own credentials. It must be called before any
// thread has switched.
func New() (*Switcher, error) {
	s := &Switcher{enabled: unix.Geteuid() == 0, ownUid: uint32(unix.Geteuid()), ownGid: uint32(unix.Getegid())}
	if !s.enabled {
		return s, nil
	}
	gs, err := unix.Getgroups()
	if err != nil {
		return nil, fmt.Errorf("reading the daemon's groups: %w", err)
	}
	for _, g := range gs {
		s.ownGroups = append(s.ownGroups, uint32(g))
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capget(&hdr, &s.ownCaps[0]); err != nil {
		return nil, fmt.Errorf("reading the daemon's capabilities: %w", err)
	}
	return s, nil
}

// Enabled reports whether calls really switch credentials.
func (s *Switcher) Enabled() bool { return s.enabled }

// Run calls fn on the current goroutine's OS thread with c's filesystem
// credentials and no effective capabilities, and restores the daemon's
// afterwards. A caller with the daemon's own uid and gid runs as the
// daemon; a caller with uid 0 keeps root's capabilities. If the credentials
// cannot be set, fn is not called. If they cannot be restored, the thread
// stays locked to this goroutine, so the Go runtime retires it when the
// goroutine ends and no other work ever runs on it.
func (s *Switcher) Run(c Caller, fn func() error) error {
	if !s.enabled || c.Uid == s.ownUid && c.Gid == s.ownGid {
		return fn()
	}
	runtime.LockOSThread()
	if err := s.enter(c); err != nil {
		if rerr := s.leave(); rerr != nil {
			return fmt.Errorf("switching to uid %d: %w (and restoring: %v; thread retired)", c.Uid, err, rerr)
		}
		runtime.UnlockOSThread()
		return fmt.Errorf("switching to uid %d: %w", c.Uid, err)
	}
	ferr := fn()
	if err := s.leave(); err != nil {
		return fmt.Errorf("restoring the daemon's credentials after a call as uid %d: %w (thread retired)", c.Uid, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

func (s *Switcher) enter(c Caller) error {
	if err := setgroups(c.Groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := setfsgid(c.Gid); err != nil {
		return fmt.Errorf("setfsgid: %w", err)
	}
	if err := setfsuid(c.Uid); err != nil {
		return fmt.Errorf("setfsuid: %w", err)
	}
	if c.Uid == 0 {
		return nil // root, with another group: root's powers stay
	}
	// Capabilities that are not about files (CAP_SYS_RESOURCE lets writes
	// use blocks reserved for root; CAP_SYS_ADMIN writes trusted.*
	// xattrs) survive a change of fsuid: drop every effective one.
	caps := s.ownCaps
	caps[0].Effective, caps[1].Effective = 0, 0
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

func (s *Switcher) leave() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	caps := s.ownCaps
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := setfsuid(s.ownUid); err != nil {
		return fmt.Errorf("setfsuid: %w", err)
	}
	if err := setfsgid(s.ownGid); err != nil {
		return fmt.Errorf("setfsgid: %w", err)
	}
	if err := setgroups(s.ownGroups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	return nil
}

// setfsuid and setfsgid set the thread's filesystem uid and gid.
func setfsuid(uid uint32) error { return setfsid(unix.SYS_SETFSUID, "fsuid", uid) }
func setfsgid(gid uint32) error { return setfsid(unix.SYS_SETFSGID, "fsgid", gid) }

// setfsid makes system call sysno (setfsuid or setfsgid). It reports the
// previous value, not an error; a second call with an invalid id asks
// for the current one, which tells whether the first took.
func setfsid(sysno uintptr, what string, id uint32) error {
	unix.RawSyscall(sysno, uintptr(id), 0, 0)
	cur, _, _ := unix.RawSyscall(sysno, ^uintptr(0), 0, 0)
	if uint32(cur) != id {
		return fmt.Errorf("%s is %d, not %d", what, uint32(cur), id)
	}
	return nil
}

// setgroups sets the thread's supplementary groups (the raw system call
// is per thread; the C library's and Go's wrappers broadcast it).
func setgroups(gs []uint32) error {
	var p unsafe.Pointer
	if len(gs) > 0 {
		p = unsafe.Pointer(&gs[0])
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gs)), uintptr(p), 0); e != 0 {
		return e
	}
	return nil
}

// Switched reports whether the current thread runs as a caller, inside
// Run, rather than as the daemon.
func (s *Switcher) Switched() bool {
	if !s.enabled {
		return false
	}
	uid, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
	gid, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0)
	return uint32(uid) != s.ownUid || uint32(gid) != s.ownGid
}

// AsDaemon runs fn with the daemon's own credentials. Inside Run (as c)
// it restores the daemon's credentials for fn and switches back to c
// afterwards; elsewhere it just calls fn. The daemon's own work in the
// middle of a caller's request (deciding, keeping a pre-image, recording)
// needs it: the caller may not be able to read what the daemon keeps.
func (s *Switcher) AsDaemon(c Caller, fn func() error) error {
	// A caller with the daemon's own ids is never switched to (see Run):
	// no system call to find that out.
	if !s.enabled || c.Uid == s.ownUid && c.Gid == s.ownGid || !s.Switched() {
		return fn()
	}
	if err := s.leave(); err != nil {
		return fmt.Errorf("restoring the daemon's credentials: %w", err)
	}
	ferr := fn()
	if err := s.enter(c); err != nil {
		return fmt.Errorf("switching back to uid %d: %w", c.Uid, err)
	}
	return ferr
}
