package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// hideFlags make a hiding tmpfs read-only and inert.
const hideFlags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC

// maxHidePasses bounds the rounds of hiding newly found exposures.
const maxHidePasses = 8

// seal makes the calling process's mount namespace (new, and its own)
// one in which no path leads to cfg.Source: the source and cfg.Hide are
// covered by empty read-only tmpfs mounts, /proc shows only the session's
// pid namespace, every other procfs is covered, and every mount of the
// source's filesystem that shows the source, or a part of it, elsewhere
// is covered too. An unprivileged process cannot lift the covers: mounts
// carried into a less privileged user namespace are locked together, so
// `unshare -Urm; umount` fails, and a non-recursive bind of a directory
// with locked mounts below it is refused.
func seal(cfg Config) error {
	// Nothing done here may reach the mounts of the parent namespace, and
	// nothing mounted there later (a bind of the source, say) reaches
	// this one. (The mount's own end reaches the session through
	// intentfs unmount, which ends its sessions first.)
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the session's mounts private: %w", err)
	}
	var src unix.Stat_t
	if err := unix.Stat(cfg.Source, &src); err != nil {
		return fmt.Errorf("reading the source %s: %w", cfg.Source, err)
	}
	before, err := readMountinfo()
	if err != nil {
		return err
	}
	major, minor := unix.Major(src.Dev), unix.Minor(src.Dev)
	srcInFS, err := sourceInFS(before, major, minor, cfg.Source)
	if err != nil {
		return err
	}
	var mnt unix.Stat_t
	if err := unix.Stat(cfg.Mountpoint, &mnt); err != nil {
		return fmt.Errorf("reading the mount %s: %w", cfg.Mountpoint, err)
	}
	if mnt.Dev == src.Dev {
		return fmt.Errorf("%s is not a mount of its own (it is on the source's filesystem)", cfg.Mountpoint)
	}

	if err := hide(cfg.Source); err != nil {
		return err
	}
	for _, p := range cfg.Hide {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := hide(p); err != nil {
			return err
		}
	}
	// A /proc of the session's own pid namespace: no other process, the
	// daemon included, is listed, so no /proc/PID/root, cwd or fd of
	// another leads anywhere.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting the session's /proc: %w", err)
	}
	after, err := readMountinfo()
	if err != nil {
		return err
	}
	for _, e := range after {
		switch {
		case e.FSType == "proc" && e.Point != "/proc" && !within(e.Point, "/proc"):
			if err := hide(e.Point); err != nil {
				return fmt.Errorf("covering the procfs at %s: %w", e.Point, err)
			}
		case isFUSE(e.FSType) && e.Point != cfg.Mountpoint && !within(e.Point, cfg.Mountpoint):
			// Another FUSE filesystem may mirror the source (bindfs, a
			// uid-mapping mount) under a device of its own, where the
			// search below cannot tell: none is left reachable.
			if err := hide(e.Point); err != nil {
				return fmt.Errorf("covering the FUSE mount at %s, which may mirror the source: %w", e.Point, err)
			}
		}
	}
	if err := privateScratch(cfg); err != nil {
		return err
	}
	return hideExposures(before, major, minor, srcInFS, &src)
}

// hideExposures covers every path at which another mount shows the
// source or a part of it, and fails if one stays reachable.
func hideExposures(entries []mountEntry, major, minor uint32, srcInFS string, src *unix.Stat_t) error {
	for pass := 0; ; pass++ {
		found := ""
		for _, p := range exposures(entries, major, minor, srcInFS) {
			var st unix.Stat_t
			if unix.Stat(p, &st) != nil {
				continue // not reachable by that path
			}
			if st.Dev == src.Dev {
				found = p
				break
			}
		}
		if found == "" {
			return nil
		}
		if pass == maxHidePasses {
			return fmt.Errorf("the source is still reachable at %s after covering it", found)
		}
		if err := hide(found); err != nil {
			return fmt.Errorf("the source is also reachable at %s, which could not be covered: %w", found, err)
		}
	}
}

func isFUSE(fstype string) bool {
	return fstype == "fuse" || fstype == "fuseblk" || strings.HasPrefix(fstype, "fuse.")
}

// privateScratch gives the session empty /tmp, /var/tmp and /dev/shm of
// its own and hides the user's runtime directory: the places where the
// processes of the agent's uid outside the session keep their sockets
// and pipes (tmux, dbus, ssh-agent, an editor's server), through which
// the agent could have them act outside its session.
//
// Each is bounded (size): tmpfs's own default, half of memory each, let
// an agent take three halves of the machine's memory.
//
// cfg.KeepTmp leaves the host's /tmp as it is, and cfg.BindTmp binds a
// directory of the host there, for agents whose tools keep caches in
// /tmp; the covers already mounted (the source, intentfs's runtime
// directories) are carried along, so nothing hidden shows through.
func privateScratch(cfg Config) error {
	uid, mountpoint, size := cfg.Uid, cfg.Mountpoint, cfg.ScratchSize
	if size == "" {
		size = DefaultScratchSize
	}
	if err := CheckScratchSize(size); err != nil {
		return err
	}
	for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
			continue
		}
		// The workspace mount may itself be below it: keep a handle on
		// it and put it back at its path on the new, empty one.
		keep := -1
		if within(mountpoint, dir) {
			fd, err := unix.Open(mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("holding the mount %s: %w", mountpoint, err)
			}
			keep = fd
		}
		if dir == "/tmp" && cfg.KeepTmp {
			if keep >= 0 {
				unix.Close(keep)
			}
			continue
		}
		var err error
		if dir == "/tmp" && cfg.BindTmp != "" {
			err = bindTmp(cfg.BindTmp, dir)
		} else {
			err = unix.Mount("intentfs-scratch", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size="+size)
		}
		if err == nil && keep >= 0 {
			err = remount(keep, mountpoint)
		}
		if keep >= 0 {
			unix.Close(keep)
		}
		if err != nil {
			return fmt.Errorf("giving the session a private %s: %w", dir, err)
		}
	}
	for _, dir := range []string{fmt.Sprintf("/run/user/%d", uid)} {
		if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
			continue
		}
		if err := hide(dir); err != nil {
			return err
		}
	}
	return nil
}

// bindTmp binds the host directory from at dir, with the mounts below
// it (covers included), never following a link to find it.
func bindTmp(from, dir string) error {
	fd, err := unix.Open(from, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s for the session's /tmp: %w", from, err)
	}
	defer unix.Close(fd)
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding %s at %s: %w", from, dir, err)
	}
	return unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_NOSUID|unix.MS_NODEV, "")
}

// remount binds the mount held by fd at path, making the directories
// above it (root's, 0755) on the fresh scratch filesystem.
func remount(fd int, path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	for d := path; d != "/" && d != "."; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755) // under a umask, MkdirAll's modes may be less
	}
	return unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), path, "", unix.MS_BIND|unix.MS_REC, "")
}

// hide covers dir with an empty, read-only tmpfs that nobody may enter.
func hide(dir string) error {
	if err := unix.Mount("intentfs-sealed", dir, "tmpfs", hideFlags, "size=4k,nr_inodes=2,mode=000"); err != nil {
		return fmt.Errorf("hiding %s: %w", dir, err)
	}
	return nil
}

func readMountinfo() ([]mountEntry, error) {
	f, err := os.Open(filepath.Join("/proc", "self", "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	defer f.Close()
	return parseMountinfo(f)
}
