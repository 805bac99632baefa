package container

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Problem is one thing the container was started without, and the
// `docker run` flag that gives it.
type Problem struct {
	What string
	Fix  string
}

// SetupError says why the workspace cannot be mounted in this container
// and which flags the container needs.
type SetupError struct{ Problems []Problem }

func (e *SetupError) Error() string {
	var b strings.Builder
	b.WriteString("the workspace cannot be mounted in this container:\n")
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "  - %s: add %s\n", p.What, p.Fix)
	}
	b.WriteString("Start the container with:\n" +
		"  docker run --rm -it --device /dev/fuse --cap-add SYS_ADMIN --security-opt apparmor=unconfined \\\n" +
		"      -v \"$PWD:/src\" IMAGE [--intent ID] -- CMD...\n" +
		"(podman: the same flags; in a devcontainer.json: \"runArgs\": [\"--device\", \"/dev/fuse\"] with the intentfs feature)")
	return b.String()
}

// capSysAdmin is CAP_SYS_ADMIN's bit in the capability sets.
const capSysAdmin = 21

// host is what the checks read from the running container; the tests
// replace it.
type host struct {
	// fuseDev is the FUSE device's path.
	fuseDev string
	// capEff returns the effective capability set.
	capEff func() (uint64, error)
	// probeMount tries a mount(2) like the one the workspace needs and
	// undoes it.
	probeMount func() error
	// label returns the process's LSM label (AppArmor profile or SELinux
	// context), "" if none.
	label func() string
}

func realHost() host {
	return host{fuseDev: "/dev/fuse", capEff: readCapEff, probeMount: probeTmpfs, label: readLabel}
}

// preflight finds what keeps this container from mounting the workspace
// before anything is written to the source: a mount that failed half-way
// would leave root's files in the user's .orchestration/, and go-fuse's
// fallback to fusermount3 hides the kernel's answer behind its own.
func preflight(h host) error {
	var problems []Problem
	if p := checkFuseDevice(h.fuseDev); p != nil {
		problems = append(problems, *p)
	}
	caps, err := h.capEff()
	if err != nil {
		return fmt.Errorf("reading the container's capabilities: %w", err)
	}
	if caps&(1<<capSysAdmin) == 0 {
		problems = append(problems, Problem{
			What: "the container lacks CAP_SYS_ADMIN, which mounting the workspace and sealing the agent's session need",
			Fix:  "--cap-add SYS_ADMIN"})
	} else if p := classifyMountError(h.probeMount(), h.label()); p != nil {
		// Only with the capability does the kernel's answer say something
		// about the security profile.
		problems = append(problems, *p)
	}
	if len(problems) > 0 {
		return &SetupError{Problems: problems}
	}
	return nil
}

// checkFuseDevice reports a FUSE device that is missing or that the
// container may not open (a device cgroup that does not list it).
func checkFuseDevice(path string) *Problem {
	fix := "--device /dev/fuse"
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return &Problem{What: path + " does not exist in the container", Fix: fix}
		}
		return &Problem{What: fmt.Sprintf("%s cannot be read (%v)", path, err), Fix: fix}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return &Problem{What: path + " is not the FUSE character device", Fix: fix}
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return &Problem{What: fmt.Sprintf("%s exists but the container may not open it (%v)", path, err), Fix: fix}
	}
	unix.Close(fd)
	return nil
}

// classifyMountError names the security profile that refused a mount
// made with CAP_SYS_ADMIN.
func classifyMountError(err error, label string) *Problem {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EACCES) && isSELinuxLabel(label):
		return &Problem{What: fmt.Sprintf("mount(2) was refused (EACCES) by the SELinux label %q", label),
			Fix: "--security-opt label=disable"}
	case errors.Is(err, unix.EACCES):
		what := "mount(2) was refused (EACCES): an AppArmor profile forbids mounts"
		if label != "" {
			what = fmt.Sprintf("mount(2) was refused (EACCES) by the AppArmor profile %q, which forbids mounts", label)
		}
		return &Problem{What: what, Fix: "--security-opt apparmor=unconfined"}
	case errors.Is(err, unix.EPERM):
		return &Problem{What: "mount(2) was refused (EPERM) although CAP_SYS_ADMIN is granted: a seccomp profile forbids it, " +
			"or the engine runs the container in a user namespace (rootless), where this mount is not possible",
			Fix: "--security-opt seccomp=unconfined, or run with a rootful engine"}
	}
	return &Problem{What: fmt.Sprintf("a test mount failed: %v", err), Fix: "--security-opt apparmor=unconfined (or see the error)"}
}

func isSELinuxLabel(label string) bool {
	// SELinux contexts are user:role:type[:level]; AppArmor profiles
	// are a name with an optional " (mode)".
	return strings.Count(label, ":") >= 2 && !strings.Contains(label, " ")
}

// readCapEff parses CapEff from /proc/self/status.
func readCapEff() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	return parseCapEff(string(b))
}

func parseCapEff(status string) (uint64, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff line in /proc/self/status")
}

// probeTmpfs mounts a tiny tmpfs on a fresh directory and unmounts it:
// AppArmor's docker-default profile and SELinux refuse every mount, so
// their answer to this one is theirs to the FUSE mount too.
func probeTmpfs() error {
	dir, err := os.MkdirTemp("", "intentfs-probe-")
	if err != nil {
		return fmt.Errorf("making a directory for a test mount: %w", err)
	}
	defer os.Remove(dir)
	if err := unix.Mount("intentfs-probe", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k"); err != nil {
		return err
	}
	return unix.Unmount(dir, unix.MNT_DETACH)
}

// readLabel returns the process's LSM label; AppArmor's has its own file
// on kernels with stacked LSMs.
func readLabel() string {
	for _, p := range []string{"/proc/self/attr/apparmor/current", "/proc/self/attr/current"} {
		if b, err := os.ReadFile(p); err == nil {
			if s := strings.TrimRight(string(b), "\x00\n"); s != "" {
				return s
			}
		}
	}
	return ""
}
