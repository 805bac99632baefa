package runner

import (
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// User is the account a session's command runs as.
type User struct {
	Name     string
	Uid, Gid uint32
	Groups   []uint32
	Home     string
}

// ResolveUser picks the account what (an agent, acceptance checks) runs
// as: name (a user name or numeric uid) if given; else the user who
// invoked sudo; else the owner of the source directory. Root is refused
// unless it was named explicitly: a root agent can undo every seal.
// command is the command line the user typed ("intentfs run"), for the
// refusal.
func ResolveUser(name, source, what, command string) (User, error) {
	explicit := name != ""
	if !explicit {
		name = os.Getenv("SUDO_USER")
	}
	if name == "" {
		st, err := os.Stat(source)
		if err != nil {
			return User{}, fmt.Errorf("finding the owner of %s: %w", source, err)
		}
		name = strconv.FormatUint(uint64(st.Sys().(*syscall.Stat_t).Uid), 10)
	}
	u, err := lookupUser(name)
	if err != nil {
		return User{}, err
	}
	if u.Uid == 0 && !explicit {
		return User{}, fmt.Errorf("%s would run as root: no --user was given, %s was not started through sudo by another user, and the source %s belongs to root; "+
			"name an unprivileged user with --user (%s --user agent ...), or --user root if you really mean it", what, command, source, command)
	}
	return u, nil
}

// lookupUser finds name, a user name or a numeric uid; a uid with no
// account runs with its own gid and no supplementary groups.
func lookupUser(name string) (User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, numErr := strconv.ParseUint(name, 10, 32); numErr != nil {
			return User{}, fmt.Errorf("no user %q: %w", name, err)
		}
		if u, err = user.LookupId(name); err != nil {
			id, _ := strconv.ParseUint(name, 10, 32)
			return User{Name: name, Uid: uint32(id), Gid: uint32(id), Home: "/"}, nil
		}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return User{}, fmt.Errorf("user %q has a non-numeric uid or gid", name)
	}
	out := User{Name: u.Username, Uid: uint32(uid), Gid: uint32(gid), Home: u.HomeDir}
	if ids, err := u.GroupIds(); err == nil {
		for _, g := range ids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil && !slices.Contains(out.Groups, uint32(n)) {
				out.Groups = append(out.Groups, uint32(n))
			}
		}
	}
	if out.Home == "" {
		out.Home = "/"
	}
	return out, nil
}

// Environment returns the command's environment: the caller's, with the
// account's HOME, USER and LOGNAME, PWD set to dir, and what would point
// the agent at intentfs's or sudo's private state left out.
func Environment(base []string, u User, dir, mountpoint string) []string {
	drop := []string{"HOME", "USER", "LOGNAME", "PWD", "OLDPWD", "MAIL", "XDG_RUNTIME_DIR", "INTENTFS_RUNTIME_DIR",
		"INTENTFS_SESSION", "INTENTFS_MOUNT", "SUDO_COMMAND", "SUDO_USER", "SUDO_UID", "SUDO_GID"}
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, k) {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+u.Home, "USER="+u.Name, "LOGNAME="+u.Name, "PWD="+dir, "INTENTFS_MOUNT="+mountpoint)
}
