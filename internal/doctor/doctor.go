// Package doctor examines an intentfs setup (the kernel's FUSE support,
// the source checkout, who the agent runs as) and names each problem with
// its fix. It only reads: nothing is changed.
//
// The setup intentfs expects: a human owns the checkout; root mounts it;
// the agent runs as a user of its own (intentfs run --user agent) that
// may write the checkout's files through the mount (the kernel checks the
// source's owner and mode for it there) but cannot reach the source
// directly (a directory on the way to it denies the agent search
// permission), so every change it makes passes through intentfs.
package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/fileperm"
	"github.com/intentfs/intentfs/ledger"
)

// Status of a finding.
const (
	OK      = "ok"
	Note    = "note"    // worth knowing, nothing is broken
	Problem = "problem" // the setup does not work, or does not govern
)

// Finding is the answer of one check.
type Finding struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Agent is the account the agent runs as.
type Agent struct {
	Name     string   `json:"name"`
	Uid      uint32   `json:"uid"`
	Gid      uint32   `json:"gid"`
	Groups   []uint32 `json:"groups,omitempty"`
	Source   string   `json:"from"` // how it was found: --agent, a live session, the user "agent"
	Sessions []string `json:"sessions,omitempty"`
}

// Setup is what to examine.
type Setup struct {
	// Root is where /dev and /sys are found ("" or "/" for the system's).
	Root string
	// Source is the checkout ("" when none is known); Mountpoint its
	// mount, if any.
	Source, Mountpoint string
	// Agent is the agent's account, nil when unknown.
	Agent *Agent
	// Self is the uid running the doctor.
	Self uint32
	// MaxEntries bounds the files of the source examined for ownership.
	MaxEntries int
	// SafeDirectories are the safe.directory values the agent's git reads
	// (the system's and the agent's global config); nil when they could
	// not be read.
	SafeDirectories []string
}

// Run runs every check that applies to s.
func Run(s Setup) []Finding {
	if s.MaxEntries == 0 {
		s.MaxEntries = 20000
	}
	out := []Finding{devFuse(s), enableUring(s)}
	if s.Source == "" {
		return append(out, Finding{Check: "source", Status: Note, Detail: "no checkout to examine: none is mounted here and none was named",
			Fix: "name it: intentfs doctor --source DIR (or --mount M)"})
	}
	var st unix.Stat_t
	if err := unix.Stat(s.Source, &st); err != nil {
		return append(out, Finding{Check: "source", Status: Problem, Detail: fmt.Sprintf("cannot examine the source %s: %v", s.Source, err),
			Fix: "run intentfs doctor as root, or as the checkout's owner"})
	}
	out = append(out, lockFile(s))
	if s.Agent == nil {
		return append(out, Finding{Check: "agent", Status: Note, Detail: "no agent account to examine: no live session, no --agent, and no user named agent",
			Fix: "create one (useradd -m agent), start the agent with intentfs run --user agent, and check it: intentfs doctor --agent agent"})
	}
	out = append(out, agentIsNotTheHuman(s, &st))
	out = append(out, sourceUnreachable(s))
	out = append(out, sourceWritable(s, &st))
	if f, ok := gitSafeDirectory(s, &st); ok {
		out = append(out, f)
	}
	return out
}

// gitSafeDirectory checks that the agent's git will work in the mount.
// Through the mount the repository keeps its owner (the human), and git
// refuses a repository another user owns ("detected dubious ownership")
// unless safe.directory names it. It applies only to a git checkout the
// agent does not own.
func gitSafeDirectory(s Setup, src *unix.Stat_t) (Finding, bool) {
	if _, err := os.Lstat(filepath.Join(s.Source, ".git")); err != nil || src.Uid == s.Agent.Uid {
		return Finding{}, false
	}
	f := Finding{Check: "safe_directory"}
	mnt := s.Mountpoint
	if mnt == "" {
		mnt = "MOUNTPOINT"
	}
	fix := fmt.Sprintf("sudo git config --system --add safe.directory %s (or, as the agent: git config --global --add safe.directory %s)", mnt, mnt)
	switch {
	case s.SafeDirectories == nil:
		f.Status, f.Detail, f.Fix = Note, "could not read git's safe.directory settings: the agent's git refuses the mount (\"dubious ownership\": the checkout is another user's) unless they name it", fix
	case slices.Contains(s.SafeDirectories, "*") || s.Mountpoint != "" && slices.Contains(s.SafeDirectories, s.Mountpoint):
		f.Status, f.Detail = OK, "git's safe.directory lets the agent's git work in the mount"
	case s.Mountpoint == "":
		f.Status, f.Fix = Note, fix
		f.Detail = fmt.Sprintf("the checkout is owned by %s, not the agent: the agent's git refuses the mount (\"detected dubious ownership\") unless safe.directory names the mountpoint (it names %s)", owner(src.Uid, src.Gid), describeSafe(s.SafeDirectories))
	default:
		f.Status, f.Fix = Problem, fix
		f.Detail = fmt.Sprintf("the checkout is owned by %s, not the agent: every git command the agent runs in %s fails with \"detected dubious ownership\", since safe.directory names %s", owner(src.Uid, src.Gid), s.Mountpoint, describeSafe(s.SafeDirectories))
	}
	return f, true
}

func describeSafe(dirs []string) string {
	if len(dirs) == 0 {
		return "nothing"
	}
	if len(dirs) > 3 {
		return strings.Join(dirs[:3], ", ") + fmt.Sprintf(" and %d more", len(dirs)-3)
	}
	return strings.Join(dirs, ", ")
}

// Problems counts the findings that are problems.
func Problems(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if f.Status == Problem {
			n++
		}
	}
	return n
}

func (s Setup) sys(p string) string {
	if s.Root == "" {
		return p
	}
	return filepath.Join(s.Root, p)
}

func devFuse(s Setup) Finding {
	f := Finding{Check: "dev_fuse"}
	var st unix.Stat_t
	err := unix.Stat(s.sys("/dev/fuse"), &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		f.Status, f.Detail = Problem, "/dev/fuse does not exist: intentfs cannot mount"
		f.Fix = "load the module (sudo modprobe fuse); in a container, pass the device: --device /dev/fuse (podman/docker)"
	case err != nil:
		f.Status, f.Detail = Problem, fmt.Sprintf("/dev/fuse: %v", err)
		f.Fix = "check the device's permissions (ls -l /dev/fuse) and run intentfs mount as root"
	case st.Mode&unix.S_IFMT != unix.S_IFCHR:
		f.Status, f.Detail = Problem, "/dev/fuse is not a character device"
		f.Fix = "remove it and load the module again: sudo rm /dev/fuse && sudo modprobe -r fuse && sudo modprobe fuse"
	default:
		f.Status, f.Detail = OK, fmt.Sprintf("/dev/fuse is the FUSE device (%d,%d)", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	return f
}

func enableUring(s Setup) Finding {
	const param = "/sys/module/fuse/parameters/enable_uring"
	f := Finding{Check: "enable_uring"}
	b, err := os.ReadFile(s.sys(param))
	v := strings.TrimSpace(string(b))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.Status, f.Detail = Note, "this kernel has no FUSE over io_uring ("+param+" is absent): intentfs uses /dev/fuse, which works, more slowly"
		f.Fix = "optional: a kernel of 6.14 or later built with CONFIG_FUSE_IO_URING"
	case err != nil:
		f.Status, f.Detail = Note, fmt.Sprintf("%s: %v", param, err)
	case v == "Y" || v == "1":
		f.Status, f.Detail = OK, "FUSE over io_uring is enabled: intentfs mount uses it"
	default:
		f.Status, f.Detail = Note, "FUSE over io_uring is disabled ("+param+" is "+strconv.Quote(v)+"): intentfs uses /dev/fuse, which works, more slowly"
		f.Fix = "optional, as root: echo Y > " + param + " (before mounting), or load the module with modprobe fuse enable_uring=1"
	}
	return f
}

// lockFile finds a lock left by a mount run as another user, which makes
// the next mount by this user fail with "opening lock ...: permission
// denied".
func lockFile(s Setup) Finding {
	path := filepath.Join(s.Source, ledger.LockFile)
	f := Finding{Check: "lock"}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		f.Status, f.Detail = OK, "no lock file: the source is not mounted"
		return f
	}
	held := lockHeld(path)
	who := owner(st.Uid, st.Gid)
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		f.Status, f.Detail = Problem, path+" is not a regular file: no mount can take the lock"
		f.Fix = "remove it: sudo rm " + path
	case held:
		f.Status, f.Detail = OK, fmt.Sprintf("%s is held: the source is mounted (by %s)", path, who)
	case st.Uid != s.Self && s.Self != 0 && st.Mode&0o022 == 0:
		f.Status = Problem
		f.Detail = fmt.Sprintf("%s belongs to %s and nothing holds it: it was left by a mount run as that user, and a mount by uid %d fails with \"opening lock %s: permission denied\"", path, who, s.Self, path)
		f.Fix = "mount as root (sudo intentfs mount ...), as intended, or remove the stale lock: sudo rm " + path
	default:
		f.Status, f.Detail = OK, path+" is free (left by an earlier mount; the next one takes it)"
	}
	return f
}

// lockHeld reports whether a mount holds the lock (a shared flock cannot
// be taken beside its exclusive one).
func lockHeld(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
	return errors.Is(err, unix.EWOULDBLOCK)
}

func agentIsNotTheHuman(s Setup, src *unix.Stat_t) Finding {
	a := s.Agent
	f := Finding{Check: "agent_uid"}
	switch {
	case a.Uid == 0:
		f.Status, f.Detail = Problem, fmt.Sprintf("the agent (%s) runs as root: it can reach and change the source directly, and unmount intentfs", a.describe())
		f.Fix = "run the agent as an unprivileged user of its own: useradd -m agent, then intentfs run --user agent -- COMMAND"
	case a.Uid == src.Uid:
		f.Status, f.Detail = Problem, fmt.Sprintf("the agent (%s) runs as the owner of the source %s: it can change the checkout directly, around intentfs, and the file permissions cannot keep it out", a.describe(), s.Source)
		f.Fix = "run the agent as a user of its own, not the human's: useradd -m agent, then intentfs run --user agent -- COMMAND"
	default:
		f.Status, f.Detail = OK, fmt.Sprintf("the agent (%s) is not the owner of the source (%s)", a.describe(), owner(src.Uid, src.Gid))
	}
	return f
}

// sourceUnreachable checks that the agent cannot walk to the source: some
// directory on the way must deny it search permission.
func sourceUnreachable(s Setup) Finding {
	a := s.Agent
	f := Finding{Check: "source_reachable"}
	if a.Uid == 0 {
		f.Status, f.Detail = Problem, "root reaches every directory"
		f.Fix = "run the agent as an unprivileged user"
		return f
	}
	dirs := ancestors(s.Source)
	for _, d := range dirs {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			f.Status, f.Detail = Note, fmt.Sprintf("cannot examine %s: %v", d, err)
			return f
		}
		if !a.may(&st, 1) {
			f.Status = OK
			f.Detail = fmt.Sprintf("%s (%s %04o) keeps the agent (%s) from reaching the source directly", d, owner(st.Uid, st.Gid), st.Mode&0o7777, a.describe())
			if hasACL(d) {
				f.Status, f.Fix = Note, "an ACL on "+d+" may grant more than its mode: check it with getfacl "+d
			}
			return f
		}
	}
	parent := filepath.Dir(s.Source)
	f.Status = Problem
	f.Detail = fmt.Sprintf("the agent (%s) can reach the source %s directly: every directory on the way lets it search, so it can change files without intentfs seeing them", a.describe(), s.Source)
	f.Fix = fmt.Sprintf("keep the checkout under a directory only the human and root may enter: chmod 700 %s (if the human owns it), or move the checkout, e.g. into /home/HUMAN/work with /home/HUMAN at 0700", parent)
	return f
}

// sourceWritable checks that the agent may change the checkout's files
// through the mount: there the kernel checks the source's own owner and
// mode against the agent's uid, and refuses (FILE_PERMISSIONS) before
// intentfs decides anything.
func sourceWritable(s Setup, src *unix.Stat_t) Finding {
	a := s.Agent
	f := Finding{Check: "source_ownership"}
	var blocked []string
	n, total := 0, 0
	err := filepath.WalkDir(s.Source, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(s.Source, p)
		if d.IsDir() && (rel == ".git" || rel == ".orchestration") {
			return filepath.SkipDir
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		total++
		if total > s.MaxEntries {
			return fs.SkipAll
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return nil
		}
		want := uint32(2)
		if d.IsDir() {
			want = 3 // write and search: create and remove entries
		}
		if !a.may(&st, want) {
			n++
			if len(blocked) < 3 {
				blocked = append(blocked, fmt.Sprintf("%s (%s %04o)", rel, owner(st.Uid, st.Gid), st.Mode&0o7777))
			}
		}
		return nil
	})
	if err != nil {
		f.Status, f.Detail = Note, fmt.Sprintf("examining %s: %v", s.Source, err)
		return f
	}
	limited := ""
	if total > s.MaxEntries {
		limited = fmt.Sprintf(" (of the first %d entries)", s.MaxEntries)
	}
	if n == 0 {
		f.Status, f.Detail = OK, fmt.Sprintf("the agent (%s) may write the checkout's files and directories%s", a.describe(), limited)
		return f
	}
	f.Status = Problem
	f.Detail = fmt.Sprintf("the agent (%s) may not write %d of the checkout's files and directories%s, e.g. %s: through the mount each such change fails with \"Permission denied\" before intentfs decides (.intentfs/check says FILE_PERMISSIONS)",
		a.describe(), n, limited, strings.Join(blocked, ", "))
	grp, human := sharedGroup(src)
	addHuman := ""
	if human != "" {
		addHuman = fmt.Sprintf(" && sudo usermod -aG %s %s", grp, human)
	}
	// The group must be a dedicated one, and the default ACL keeps it
	// writing: an editor's atomic save replaces a file with a new one,
	// created with the saver's umask, which a chmod -R made before does
	// not cover.
	f.Fix = fmt.Sprintf("let the human and the agent share a dedicated group (not the human's own): sudo groupadd -f %s && sudo usermod -aG %s %s%s && sudo chgrp -R %s %s && sudo chmod -R g+rwX %s && sudo find %s -type d -exec chmod g+s {} + && sudo setfacl -R -m g::rwX %s && sudo setfacl -R -d -m g::rwX %s (the default ACL keeps files a save creates group-writable; see docs/doctor-and-permissions.md)",
		grp, grp, a.Name, addHuman, grp, s.Source, s.Source, s.Source, s.Source, s.Source)
	return f
}

// sharedGroup names the group to share the checkout through: its group
// when that is not root's nor its owner's personal group (one named
// after the owner), else "devs". human is the owner's name, to add to a
// new group ("" when unknown).
func sharedGroup(src *unix.Stat_t) (grp, human string) {
	if u, err := user.LookupId(strconv.FormatUint(uint64(src.Uid), 10)); err == nil && src.Uid != 0 {
		human = u.Username
	}
	if g, err := user.LookupGroupId(strconv.FormatUint(uint64(src.Gid), 10)); err == nil && src.Gid != 0 && g.Name != human {
		return g.Name, human
	}
	return "devs", human
}

// may reports whether the agent's mode-bit class of st grants want (a
// mask of 4 read, 2 write, 1 search/execute).
func (a *Agent) may(st *unix.Stat_t, want uint32) bool {
	if a.Uid == 0 {
		return true
	}
	perm := st.Mode & 0o777
	var bits uint32
	switch {
	case a.Uid == st.Uid:
		bits = perm >> 6
	case a.Gid == st.Gid || slices.Contains(a.Groups, st.Gid):
		bits = perm >> 3
	default:
		bits = perm
	}
	return bits&want == want
}

func (a *Agent) describe() string {
	if a.Name != "" {
		return fmt.Sprintf("%s, uid %d", a.Name, a.Uid)
	}
	return fmt.Sprintf("uid %d", a.Uid)
}

// ancestors lists dir's ancestors from the root down, dir included.
func ancestors(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		out = append(out, d)
		if d == "/" || d == "." {
			break
		}
	}
	slices.Reverse(out)
	return out
}

func hasACL(p string) bool {
	n, err := unix.Getxattr(p, "system.posix_acl_access", nil)
	return err == nil && n > 0
}

func owner(uid, gid uint32) string { return fileperm.Owner(uid, gid) }

// LookupAgent finds the account name (a user name or a numeric uid).
func LookupAgent(name string) (*Agent, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, nerr := strconv.ParseUint(name, 10, 32); nerr != nil {
			return nil, fmt.Errorf("no user %q: %w", name, err)
		}
		if u, err = user.LookupId(name); err != nil {
			uid, _ := strconv.ParseUint(name, 10, 32)
			return &Agent{Name: "", Uid: uint32(uid), Gid: uint32(uid)}, nil
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	a := &Agent{Name: u.Username, Uid: uint32(uid), Gid: uint32(gid)}
	if gs, err := u.GroupIds(); err == nil {
		for _, g := range gs {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil && uint32(n) != a.Gid {
				a.Groups = append(a.Groups, uint32(n))
			}
		}
	}
	return a, nil
}
