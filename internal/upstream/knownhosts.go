package upstream

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// CheckKnownHosts checks that path can serve as the trusted known_hosts
// of the upstream's fetch: an absolute path, a regular file, readable by
// everyone (ssh runs as the owner of .git), and neither it nor any
// directory above it a symlink, owned by anyone but root or this process's
// user, or writable by group or others (but for sticky directories such
// as /tmp, where no one replaces another's entry). The agent's uid then cannot
// change which host keys the fetch trusts.
func CheckKnownHosts(path string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return fmt.Errorf("--upstream-known-hosts %q: give a clean absolute path", path)
	}
	euid := uint32(os.Geteuid())
	for p := path; ; p = filepath.Dir(p) {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return fmt.Errorf("--upstream-known-hosts %s: %w", path, err)
		}
		kind := st.Mode & syscall.S_IFMT
		switch {
		case p == path && kind != syscall.S_IFREG:
			return fmt.Errorf("--upstream-known-hosts %s: not a regular file (a symlink is not followed)", path)
		case p != path && kind != syscall.S_IFDIR:
			return fmt.Errorf("--upstream-known-hosts %s: %s is not a directory (a symlink is not followed)", path, p)
		case st.Uid != 0 && st.Uid != euid:
			return fmt.Errorf("--upstream-known-hosts %s: %s belongs to uid %d; the file and its directories must belong to root or to you, so that no agent can change them", path, p, st.Uid)
		case st.Mode&0o022 != 0 && (p == path || st.Mode&syscall.S_ISVTX == 0):
			// A sticky directory (/tmp) lets no one replace the
			// entries of another user below it.
			return fmt.Errorf("--upstream-known-hosts %s: %s is writable by group or others: chmod go-w %s", path, p, p)
		case p == path && st.Mode&0o004 == 0:
			return fmt.Errorf("--upstream-known-hosts %s: not readable by others, and ssh runs as the owner of the repository's .git: chmod 644 %s", path, path)
		}
		if p == "/" {
			return nil
		}
	}
}

// SetKnownHosts makes the fetch trust the host keys in path (checked by
// CheckKnownHosts) besides the system's known_hosts; "" trusts the
// system's alone.
func (m *Mirror) SetKnownHosts(path string) error {
	if path != "" {
		if err := CheckKnownHosts(path); err != nil {
			return err
		}
		if strings.ContainsAny(path, " \t\n'\"\\$`") {
			return fmt.Errorf("--upstream-known-hosts %q: the path may not hold spaces, quotes or shell characters", path)
		}
	}
	m.mu.Lock()
	m.knownHosts = path
	m.mu.Unlock()
	return nil
}
