package runner

import (
	"fmt"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// CheckAncestors refuses a source that the agent's user could move: the
// seal hides the source by its path, and the daemon reads its policy and
// writes its sidecars by that path. If a directory above the source is
// writable by the user, the agent can rename it, put a directory of its
// own (with a policy of its own, or a symlink for the daemon to follow)
// at the source's path, and reach the real source where it went. A
// sticky directory (/tmp) is safe when neither it nor the entry in it
// belongs to the user. An agent running as root is not checked: nothing
// holds against it (see docs/security.md).
func CheckAncestors(source string, u User) error {
	if u.Uid == 0 {
		return nil
	}
	var child unix.Stat_t
	if err := unix.Lstat(source, &child); err != nil {
		return fmt.Errorf("reading the source %s: %w", source, err)
	}
	for dir := filepath.Dir(source); ; dir = filepath.Dir(dir) {
		var st unix.Stat_t
		if err := unix.Lstat(dir, &st); err != nil {
			return fmt.Errorf("reading %s, above the source: %w", dir, err)
		}
		sticky := st.Mode&unix.S_ISVTX != 0
		if writableBy(&st, u) && !(sticky && st.Uid != u.Uid && child.Uid != u.Uid) {
			return fmt.Errorf("%s, a directory above the source, can be changed by %s (uid %d): the agent could move the source "+
				"away from the path intentfs hides and put its own in its place. Make %s owned by root or another user and not "+
				"writable by %s, or keep the source below such a directory, or run the agent as a dedicated user (--user)",
				dir, u.Name, u.Uid, dir, u.Name)
		}
		if dir == "/" || dir == "." {
			return nil
		}
		child = st
	}
}

// writableBy reports whether u may create or rename entries in the
// directory st describes (by its mode bits; root-owned ACLs aside).
func writableBy(st *unix.Stat_t, u User) bool {
	switch {
	case st.Uid == u.Uid:
		return st.Mode&0o200 != 0
	case st.Gid == u.Gid || slices.Contains(u.Groups, st.Gid):
		return st.Mode&0o020 != 0
	}
	return st.Mode&0o002 != 0
}
