// Package fileperm says whether the source's own permissions (owner,
// group, mode bits, ACLs, a read-only filesystem) let a caller make a
// change, and if not, why, in words a person or an agent can act on.
//
// Through the mount the kernel checks these permissions itself, on the
// attributes the daemon reports, before the daemon sees the request: such
// a refusal is a plain "Permission denied" that intentfs neither decides
// nor records. A dry run (.intentfs/check, the hooks, the MCP server)
// must tell it from a policy decision, so it asks the same question here:
// faccessat2(2) with AT_EACCESS, run with the caller's filesystem
// credentials, component by component, never following a symbolic link.
package fileperm

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/creds"
)

// RunAs runs fn with a caller's filesystem credentials (creds.Switcher's
// Run, bound to one caller).
type RunAs func(fn func() error) error

// Refusal is a change the source's permissions refuse.
type Refusal struct {
	// Path is the file or directory whose permissions refuse it
	// (workspace-relative; "." is the workspace root).
	Path string
	// Reason says who owns Path, its mode, and what the caller may not do.
	Reason string
}

// Check answers whether the caller c, whose calls run through runAs, may
// make the change op (a policy operation: create, open_write, unlink,
// chmod, ...) to rel, a clean workspace-relative path below rootFd (an
// O_PATH handle on the source). It returns nil when the permissions allow
// it, or when they cannot decide it (a symbolic link on the way, a path
// that is not a directory): the kernel and the policy have the last word
// there. An error means the question could not be asked.
func Check(rootFd int, rel, op string, c creds.Caller, runAs RunAs) (*Refusal, error) {
	parts := strings.Split(rel, "/")
	if rel == "" || rel == "." {
		return nil, nil
	}
	dirFd, err := unix.Openat(rootFd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the source: %w", err)
	}
	defer func() { unix.Close(dirFd) }()
	dirRel := "."
	for _, name := range parts[:len(parts)-1] {
		var st unix.Stat_t
		err := unix.Fstatat(dirFd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			// The directories on the way would be created (mkdir -p, an
			// editor's save): the deepest existing one must let them.
			return checkDir(dirFd, dirRel, c, runAs, "create "+rel+" in it")
		}
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil, nil
		}
		if r := access(dirFd, name, unix.X_OK, runAs); r != nil {
			return refusal(join(dirRel, name), &st, c, r, "enter it (search permission), so nothing below it can be changed")
		}
		next, err := unix.Openat(dirFd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, nil // replaced since: no verdict
		}
		unix.Close(dirFd)
		dirFd, dirRel = next, join(dirRel, name)
	}
	name := parts[len(parts)-1]
	var st unix.Stat_t
	err = unix.Fstatat(dirFd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	exists := err == nil
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if exists && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil, nil // the link itself is replaced or removed: the directory decides, below
	}
	switch op {
	case "open_write", "truncate", "fallocate", "setxattr", "removexattr":
		if !exists {
			return checkDir(dirFd, dirRel, c, runAs, "create "+rel+" in it")
		}
		if r := access(dirFd, name, unix.W_OK, runAs); r != nil {
			return refusal(rel, &st, c, r, "write it")
		}
	case "create", "mknod", "symlink", "mkdir":
		if exists && op == "create" && st.Mode&unix.S_IFMT == unix.S_IFREG {
			if r := access(dirFd, name, unix.W_OK, runAs); r != nil {
				return refusal(rel, &st, c, r, "write it")
			}
			return nil, nil
		}
		return checkDir(dirFd, dirRel, c, runAs, "create "+rel+" in it")
	case "unlink", "rmdir":
		if !exists {
			return nil, nil
		}
		if r, err := checkDir(dirFd, dirRel, c, runAs, "remove "+rel+" from it"); r != nil || err != nil {
			return r, err
		}
		var dst unix.Stat_t
		if err := unix.Fstat(dirFd, &dst); err == nil && dst.Mode&unix.S_ISVTX != 0 && c.Uid != 0 && c.Uid != dst.Uid && c.Uid != st.Uid {
			return refusal(rel, &st, c, unix.EPERM, fmt.Sprintf("remove it: %s is sticky (mode %04o), so only the file's or the directory's owner may", shown(dirRel), dst.Mode&0o7777))
		}
	case "chmod", "chown", "utimes":
		if !exists || c.Uid == 0 || c.Uid == st.Uid {
			return nil, nil
		}
		if op == "utimes" && access(dirFd, name, unix.W_OK, runAs) == nil {
			return nil, nil // setting the times to now needs only write permission
		}
		what := map[string]string{"chmod": "change its mode", "chown": "change its owner or group", "utimes": "set its times"}[op]
		return refusal(rel, &st, c, unix.EPERM, what+" (only its owner may)")
	}
	return nil, nil
}

// checkDir asks whether the directory dirFd (dirRel) lets c add or
// remove entries: write and search permission.
func checkDir(dirFd int, dirRel string, c creds.Caller, runAs RunAs, what string) (*Refusal, error) {
	var st unix.Stat_t
	if err := unix.Fstat(dirFd, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", dirRel, err)
	}
	if r := access(dirFd, "", unix.W_OK|unix.X_OK, runAs); r != nil {
		return refusal(dirRel, &st, c, r, what)
	}
	return nil, nil
}

// access runs faccessat2 as the caller; it returns the refusal (EACCES,
// EPERM, EROFS) or nil. Any other answer decides nothing.
func access(dirFd int, name string, mode uint32, runAs RunAs) error {
	flags := unix.AT_EACCESS | unix.AT_SYMLINK_NOFOLLOW
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	var got error
	if err := runAs(func() error {
		got = unix.Faccessat2(dirFd, name, mode, flags)
		return nil
	}); err != nil {
		return nil
	}
	if errors.Is(got, unix.EACCES) || errors.Is(got, unix.EPERM) || errors.Is(got, unix.EROFS) {
		return got
	}
	return nil
}

func refusal(rel string, st *unix.Stat_t, c creds.Caller, why error, what string) (*Refusal, error) {
	if errors.Is(why, unix.EROFS) {
		return &Refusal{Path: rel, Reason: fmt.Sprintf("%s is on a read-only filesystem; nobody may %s", shown(rel), what)}, nil
	}
	return &Refusal{Path: rel, Reason: fmt.Sprintf("%s belongs to %s %04o; uid %d may not %s",
		shown(rel), Owner(st.Uid, st.Gid), st.Mode&0o7777, c.Uid, what)}, nil
}

// Owner names a file's owner and group, user:group, by name where the
// system knows them.
func Owner(uid, gid uint32) string {
	u := strconv.FormatUint(uint64(uid), 10)
	if x, err := user.LookupId(u); err == nil {
		u = x.Username
	}
	g := strconv.FormatUint(uint64(gid), 10)
	if x, err := user.LookupGroupId(g); err == nil {
		g = x.Name
	}
	return u + ":" + g
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func shown(rel string) string {
	if rel == "." {
		return "the workspace root"
	}
	return rel
}
