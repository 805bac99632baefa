package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
	// Nothing done here may reach the mounts of the parent namespace;
	// its unmounts still reach this one (the mount's own end, say).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
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
		if e.FSType == "proc" && e.Point != "/proc" && !within(e.Point, "/proc") {
			if err := hide(e.Point); err != nil {
				return fmt.Errorf("covering the procfs at %s: %w", e.Point, err)
			}
		}
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
