package container

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/intentfs/intentfs/internal/runner"
)

// AgentName is the account the agent runs as when no account of the
// container has its uid.
const AgentName = "agent"

// maxAccountsFile bounds what is read of /etc/passwd and /etc/group.
const maxAccountsFile = 4 << 20

// Identity is who the agent runs as: a uid and gid, or the name of an
// account of the container.
type Identity struct {
	// User is "UID[:GID]" or an account name; "" for the default.
	User string
	// EnvUID and EnvGID are $INTENTFS_UID and $INTENTFS_GID.
	EnvUID, EnvGID string
}

// resolveIdentity picks the agent's uid and gid: --user, else
// $INTENTFS_UID/$INTENTFS_GID, else the owner of the source, so that the
// files the agent creates belong to the host user who owns the checkout.
// Root is refused: an agent that is root in the container can undo
// every seal.
func resolveIdentity(id Identity, source string) (uid, gid uint32, err error) {
	st, err := os.Stat(source)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the source %s: %w", source, err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	uid, gid = sys.Uid, sys.Gid
	uidSet := false
	parse := func(what, v string) (uint32, error) {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%s %q is not a numeric id", what, v)
		}
		return uint32(n), nil
	}
	switch {
	case id.User != "":
		u, g, hasG := strings.Cut(id.User, ":")
		if n, perr := strconv.ParseUint(u, 10, 32); perr == nil {
			uid, uidSet = uint32(n), true
		} else {
			acct, lerr := user.Lookup(u)
			if lerr != nil {
				return 0, 0, fmt.Errorf("--user %q: no such account in the container, and not a numeric uid", u)
			}
			n, _ := strconv.ParseUint(acct.Uid, 10, 32)
			m, _ := strconv.ParseUint(acct.Gid, 10, 32)
			uid, gid, uidSet = uint32(n), uint32(m), true
		}
		if hasG {
			if gid, err = parse("--user's group", g); err != nil {
				return 0, 0, err
			}
		}
	default:
		if id.EnvUID != "" {
			if uid, err = parse("INTENTFS_UID", id.EnvUID); err != nil {
				return 0, 0, err
			}
			uidSet = true
		}
		if id.EnvGID != "" {
			if gid, err = parse("INTENTFS_GID", id.EnvGID); err != nil {
				return 0, 0, err
			}
		}
	}
	if uid == 0 {
		why := "the source " + source + " belongs to root"
		if uidSet {
			why = "uid 0 was asked for"
		}
		return 0, 0, fmt.Errorf("the agent would run as root (%s), and a root agent can undo every seal; "+
			"give the host user's ids: -e INTENTFS_UID=$(id -u) -e INTENTFS_GID=$(id -g)", why)
	}
	if gid == 0 {
		return 0, 0, errors.New("the agent would run with group root (gid 0); give another group: -e INTENTFS_GID=$(id -g)")
	}
	return uid, gid, nil
}

// ensureAccount makes sure the container has an account with uid, so
// that the agent's tools (git, ssh, shells) find a name and a home:
// an account that already has the uid is used as it is; otherwise the
// account AgentName is (re)written with uid and gid. etc is the
// directory of passwd and group ("/etc"), home the base of home
// directories ("/home").
func ensureAccount(etc, home string, uid, gid uint32) (runner.User, error) {
	passwd := filepath.Join(etc, "passwd")
	lines, err := readLines(passwd)
	if err != nil {
		return runner.User{}, err
	}
	for _, l := range lines {
		f := strings.Split(l, ":")
		if len(f) >= 7 && f[2] == strconv.FormatUint(uint64(uid), 10) {
			return runner.User{Name: f[0], Uid: uid, Gid: gid, Groups: []uint32{gid}, Home: orRoot(f[5])}, nil
		}
	}
	dir := filepath.Join(home, AgentName)
	shell := "/bin/sh"
	if _, err := os.Stat("/bin/bash"); err == nil {
		shell = "/bin/bash"
	}
	entry := fmt.Sprintf("%s:x:%d:%d:intentfs agent:%s:%s", AgentName, uid, gid, dir, shell)
	if err := rewrite(passwd, lines, AgentName, entry); err != nil {
		return runner.User{}, err
	}
	group := filepath.Join(etc, "group")
	glines, err := readLines(group)
	if err != nil {
		return runner.User{}, err
	}
	hasGroup := false
	for _, l := range glines {
		if f := strings.Split(l, ":"); len(f) >= 3 && f[2] == strconv.FormatUint(uint64(gid), 10) {
			hasGroup = true
		}
	}
	if !hasGroup {
		if err := rewrite(group, glines, AgentName, fmt.Sprintf("%s:x:%d:", AgentName, gid)); err != nil {
			return runner.User{}, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return runner.User{}, fmt.Errorf("making the agent's home %s: %w", dir, err)
	}
	// The directory itself only: a home left by an earlier start with
	// other ids is the container's, not the host's.
	if err := os.Lchown(dir, int(uid), int(gid)); err != nil {
		return runner.User{}, fmt.Errorf("giving the agent its home %s: %w", dir, err)
	}
	return runner.User{Name: AgentName, Uid: uid, Gid: gid, Groups: []uint32{gid}, Home: dir}, nil
}

func orRoot(dir string) string {
	if dir == "" {
		return "/"
	}
	return dir
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, maxAccountsFile)); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	s := strings.TrimRight(b.String(), "\n")
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\n"), nil
}

// rewrite replaces the line of the entry called name (or appends one) and
// replaces the file atomically, keeping its mode.
func rewrite(path string, lines []string, name, entry string) error {
	var out []string
	replaced := false
	for _, l := range lines {
		if strings.HasPrefix(l, name+":") {
			if !replaced {
				out = append(out, entry)
			}
			replaced = true
			continue
		}
		out = append(out, l)
	}
	if !replaced {
		out = append(out, entry)
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp := path + ".intentfs-tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(out, "\n")+"\n"), mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp, mode); err != nil { // under the daemon's umask 0 WriteFile's mode is exact, elsewhere not
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}
