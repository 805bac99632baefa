package sessions

// Attacks on intentfs run from inside a session, as uid 1000, that get
// around the seal. Each test fails while the hole is open.

import (
	"os/exec"
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// openPty returns a new pseudo-terminal's master and slave.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// Drain what the session prints, so it never blocks on a full pty.
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := m.Read(buf); err != nil {
				return
			}
		}
	}()
	return m, s
}

// A session started from a terminal (sudo intentfs run in the human's
// shell, or sudo intentfs intent complete, whose checks run the agent's
// code) shares that terminal. With TIOCSTI the agent pushes a command into
// the terminal's input; when the session ends, the human's shell (root,
// outside any session) reads and runs it: here it writes the source
// directly. The session must not be able to type into its caller's
// terminal (a terminal of its own, or no controlling terminal).
func TestSessionCannotTypeIntoTheCallersTerminal(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	const inject = `import fcntl, os, sys, termios
fd = os.open("/dev/tty", os.O_RDWR)  # the controlling terminal, whatever fds 0-2 are
for c in sys.argv[1].encode():
    fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
`
	for _, tc := range []struct {
		name       string
		stdinIsTTY bool
	}{{"interactive", true}, {"stdin not a terminal (as intent complete's checks)", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := testenv.MountForSessions(t, "INT-005")
			_, slave := openPty(t)
			payload := fmt.Sprintf("echo pwned-by-the-agent >> %s/README.md\n", e.Src)
			cmd := e.Session("--intent", "INT-001", "--", "sh", "-c",
				`echo ran > src/ran.txt; /usr/bin/python3 -c "$0" "$1"`, inject, payload)
			cmd.Stdout, cmd.Stderr = slave, slave
			ctty := 1
			if tc.stdinIsTTY {
				cmd.Stdin, ctty = slave, 0
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: ctty}
			if err := cmd.Run(); err != nil {
				t.Logf("intentfs run: %v", err)
			}
			if c, ok := e.SrcContent("src/ran.txt"); !ok || c != "ran\n" {
				t.Fatalf("the session's command did not run (src/ran.txt: %q)", c)
			}
			// What the caller's shell reads next from its terminal.
			// One Fd() call: each call puts the file back in blocking mode.
			sfd := int(slave.Fd())
			if err := unix.SetNonblock(sfd, true); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4096)
			n, err := unix.Read(sfd, buf)
			if err != nil && !errors.Is(err, unix.EAGAIN) {
				t.Fatalf("reading the terminal: %v", err)
			}
			if n > 0 {
				t.Fatalf("after the session ended, the caller's terminal holds input the agent typed: %q "+
					"(the human's shell, root, would run it outside any session)", buf[:n])
			}
		})
	}
}

// intentfs run hands the command every descriptor it inherited: one open
// on the source directory (a parent that does not set close-on-exec, a
// wrapper run as root without sudo, which would close them) leads the
// agent past every cover, through /proc/self/fd/N.
func TestSessionDoesNotInheritTheCallersDescriptors(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	dir, err := os.Open(e.Src)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	cmd := e.Session("--intent", "INT-001", "--", "sh", "-c",
		`echo ran > src/ran.txt; for fd in $(ls /proc/self/fd); do echo pwned >> /proc/self/fd/$fd/README.md 2>/dev/null && echo "wrote the source through fd $fd"; done; ls -l /proc/self/fd`)
	// fd 7 in intentfs run (3-5 are the session's own pipes).
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, dir}
	out, err := cmd.CombinedOutput()
	t.Logf("%v\n%s", err, out)
	if c, ok := e.SrcContent("src/ran.txt"); !ok || c != "ran\n" {
		t.Fatalf("the session's command did not run")
	}
	if c, _ := e.SrcContent("README.md"); c != "human readme\n" {
		t.Fatalf("the agent wrote README.md in the source through a descriptor intentfs run inherited: %q", c)
	}
	if strings.Contains(string(out), e.Src) {
		t.Errorf("the session holds a descriptor of the source")
	}
	if strings.Contains(string(out), "/dev/fuse") {
		t.Errorf("the session holds a descriptor of /dev/fuse (the daemon's, not close-on-exec): it can read and answer the mount's requests")
	}
}

// intent complete on an unmounted source mounts it in the CLI process and
// runs the checks (code the agent wrote: its tests) from that process. The
// daemon's /dev/fuse descriptor is not close-on-exec, so every check holds
// the mount's FUSE connection: it can take requests meant for the daemon
// and answer them itself (any file's content or attributes, success for a
// change never made) for every process using the mount.
func TestCompleteChecksDoNotHoldTheMountsDevice(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	const pol = `active_intents:
  - id: INT-001
    name: "source work"
    status: IN_PROGRESS
    owned_scope: ["src/**"]
    acceptance_criteria:
      - text: "holds no fuse device"
        check: "for f in /proc/self/fd/*; do readlink $f; done; ! for f in /proc/self/fd/*; do readlink $f; done | grep -q /dev/fuse"
`
	c, repo, _ := testenv.NewPolicyRepo(t, pol)
	if err := os.Chmod(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	// The checks run as the agent: close every descriptor of this test
	// process first, so only what intent complete opens itself can leak.
	cmd := exec.Command("bash", "-c", `for fd in $(ls /proc/$$/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done; exec "$@"`,
		"sh", c.Bin, "intent", "complete", "INT-001", "--source", repo, "--user", "1000")
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+c.Runtime)
	out, err := cmd.CombinedOutput()
	t.Logf("%v\n%s", err, out)
	if err != nil || !strings.Contains(string(out), "PASS  holds no fuse device") {
		t.Fatalf("an acceptance check held a /dev/fuse descriptor (or complete failed)")
	}
}

// The seal covers paths, but the agent's uid is also the uid of processes
// outside any session: by default (--user is the user who ran sudo) the
// human's own tmux server, editor server, systemd --user, or any shell
// reading commands. A session hands such a process a command (here through
// a FIFO, as `tmux new-window CMD` does through tmux's socket) and it runs
// outside the session, with the mount's intent (INT-005, everything).
func TestSessionCannotActThroughTheUsersProcessesOutside(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	dir, err := os.MkdirTemp("", "intentfs-fifo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "cmds")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	// The human's long-lived process, as the agent's uid, outside any
	// session: it runs whatever reaches it, in the mount.
	outside := testenv.CommandIn(e.Mnt, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sh", "-c", `exec sh < "$0"`, fifo)
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- outside.Wait() }()
	t.Cleanup(func() { _ = outside.Process.Kill(); <-ended })
	out, code := e.RunSession("--intent", "INT-001", "--", "sh", "-c",
		`if echo "echo pwned-from-outside >> README.md" > "$0"; then echo REACHED; fi; echo ran > src/ran.txt`, fifo)
	t.Logf("exit %d\n%s", code, out)
	if c, ok := e.SrcContent("src/ran.txt"); !ok || c != "ran\n" {
		t.Fatalf("the session's command did not run")
	}
	if strings.Contains(out, "REACHED") {
		// The FIFO's writer closed: the outside shell runs what it got
		// and ends.
		select {
		case <-ended:
			ended <- nil // for the cleanup
		case <-time.After(30 * time.Second):
			t.Fatalf("the outside shell did not end")
		}
	}
	if c, _ := e.SrcContent("README.md"); c != "human readme\n" {
		t.Fatalf("a session got a process of its uid outside the session to write README.md under the mount's intent: %q", c)
	}
}

// The seal looks for mounts that show the source once, when the session
// starts, and makes the session's mounts slaves of the host's: a mount of
// the source made on the host afterwards, below a shared mount (on a
// systemd host / is shared, so anywhere), propagates into the running
// session uncovered, and the agent writes the source through it.
func TestSessionSourceMountedLaterStaysHidden(t *testing.T) {
	// Serial: mounts a source on the host, where every session's seal scans the mount table.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	shared, err := os.MkdirTemp("", "intentfs-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	if err := unix.Mount("intentfs-test", shared, "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(shared, unix.MNT_DETACH) })
	if err := unix.Mount("", shared, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	view := filepath.Join(shared, "view")
	if err := os.Mkdir(view, 0o755); err != nil {
		t.Fatal(err)
	}
	// The agent tries the later mount once the test has made it: mount
	// propagation is done when mount(2) returns, so waiting any longer
	// for README.md to show there (the whole wait, when it never does)
	// would prove nothing more.
	cmd := e.Session("--intent", "INT-001", "--", "sh", "-c", waitFile+
		`echo > src/ready; w src/mounted; if [ -e "$0/README.md" ]; then echo pwned-through-a-later-mount >> "$0/README.md" && echo WROTE; fi`, view)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, func() bool { _, ok := e.SrcContent("src/ready"); return ok }, "the session to start")
	// The human (or a tool) mounts the source elsewhere while the agent runs.
	if err := unix.Mount(e.Src, view, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(view, unix.MNT_DETACH) })
	testenv.WriteFile(t, filepath.Join(e.Src, "src/mounted"), "")
	err = cmd.Wait()
	t.Logf("%v\n%s", err, out.String())
	if c, _ := e.SrcContent("README.md"); c != "human readme\n" {
		t.Fatalf("the agent wrote README.md in the source through a mount made after its session started: %q", c)
	}
}

// An acceptance check runs the agent's code (its tests), and intent
// complete prints a failed check's output to the human's terminal as it
// is: escape sequences the agent chose reach the terminal (set its title,
// write the clipboard with OSC 52, move the cursor to overwrite "FAIL"
// with "PASS"). Everything printed is escaped.
func TestCompletePrintsCheckOutputEscaped(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	const pol = `active_intents:
  - id: INT-001
    name: "source work"
    status: IN_PROGRESS
    owned_scope: ["src/**"]
    acceptance_criteria:
      - text: "the agent's tests"
        check: "printf 'ok\\033]52;c;ZWNobyBwd25lZA==\\007\\033[1A\\r  PASS  \\n'; exit 1"
`
	c, repo, _ := testenv.NewPolicyRepo(t, pol)
	out, code := c.Run("intent", "complete", "INT-001", "--source", repo, "--user", "1000")
	t.Logf("exit %d\n%q", code, out)
	if code != 1 || !strings.Contains(out, "FAIL  the agent's tests") {
		t.Fatalf("the failing check was not reported")
	}
	if strings.ContainsAny(out, "\x1b\x07\r") {
		t.Fatalf("intent complete printed the check's escape sequences to the terminal unescaped")
	}
}

// Acceptance checks run code the agent wrote. By default they run as the
// user who ran sudo (the human), not as the agent's user, so an agent
// working as its own account ("intentfs run --user agent", as the README
// shows) gets its code run as the human when the human completes the
// intent: with the human's files, keys and processes (the same-uid
// escape above). With an agent session holding the intent, its user is
// the one the checks must run as, unless --user says otherwise.
func TestCompleteChecksRunAsTheAgentNotTheHuman(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	holder := e.Session("--intent", "INT-001", "--name", "worker", "--", "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	testenv.WaitFor(t, func() bool { s, ok := e.SessionNamed("worker"); return ok && s.Live }, "the worker's session")
	bin, err := testenv.CLIBinary()
	if err != nil {
		t.Fatal(err)
	}
	// The human is "nobody" here, completing through sudo.
	cmd := exec.Command(bin, "intent", "complete", "INT-001", "--source", e.Src, "--json")
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+e.Reg, "SUDO_USER=nobody")
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	t.Logf("%v\n%s", err, out)
	if !strings.Contains(string(out), `"output": "`+strconv.Itoa(testenv.AgentUID)) {
		t.Fatalf("the acceptance check (the agent's code) did not run as the agent's uid %d", testenv.AgentUID)
	}
}

// Inside a session, .intentfs/status names the session's intent but gives
// the name and status of the mount's: the agent (and `intentfs status`
// run inside the session) is told it works on "everything".
func TestSessionStatusNamesTheSessionsIntent(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	out, code := e.RunSession("--intent", "INT-001", "--", "cat", ".intentfs/status")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var st struct {
		Active string `json:"active_intent"`
		Name   string `json:"intent_name"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if st.Active != "INT-001" || st.Name != "source work" {
		t.Fatalf("the session's status says intent %q named %q, want INT-001 \"source work\"", st.Active, st.Name)
	}
}

// Another filesystem that mirrors the source (bindfs, an sshfs or NFS
// export of it, a FUSE loopback such as a dev container's uid-mapping
// mount) shows the source through a different device: the seal, which
// looks only for mounts of the source's own device, leaves it uncovered,
// and the agent writes the source through it. The README promises that
// every other mount that shows the source is covered or run refuses.
func TestSessionSourceMirroredByAnotherFilesystemIsCovered(t *testing.T) {
	// Serial: mounts a source on the host, where every session's seal scans the mount table.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	mirror, err := os.MkdirTemp("", "intentfs-mirror-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(mirror) })
	if err := os.Chmod(mirror, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := fs.NewLoopbackRoot(e.Src)
	if err != nil {
		t.Fatal(err)
	}
	server, err := fs.Mount(mirror, root, &fs.Options{MountOptions: fuse.MountOptions{AllowOther: true,
		Options: []string{"default_permissions"}, FsName: e.Src, Name: "bindfs", DirectMount: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if server.Unmount() != nil {
			_ = unix.Unmount(mirror, unix.MNT_DETACH)
		}
	})
	out, code := e.RunSession("--intent", "INT-001", "--", "sh", "-c",
		`echo ran > src/ran.txt; echo pwned-through-a-mirror >> "$0/README.md" && echo WROTE`, mirror)
	t.Logf("exit %d\n%s", code, out)
	if c, _ := e.SrcContent("README.md"); c != "human readme\n" {
		t.Fatalf("the agent wrote README.md in the source through another filesystem that mirrors it: %q", c)
	}
	if _, ok := e.SrcContent("src/ran.txt"); !ok && code != 125 {
		t.Fatalf("the session neither ran nor refused to start")
	}
}

// The seal covers the source by its path. A checkout usually sits in a
// directory the agent's user owns (~/work/proj; by default the agent runs
// as the human). One session renames that directory (it contains the
// covered source but is not itself a mountpoint) and leaves an empty
// decoy at the old path. The daemon keeps serving the moved source, and
// every later session, and every acceptance check, covers the decoy: the
// real source is reachable at the new path.
func TestSessionSourceMovedByAnEarlierSessionStaysHidden(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	e, _, home, src := mountInAgentsHome(t)
	moved := filepath.Join(home, "work.old", "proj")
	out, code := e.RunSession("--intent", "INT-001", "--", "sh", "-c",
		`mv "$0/work" "$0/work.old" && mkdir -p "$0/work/proj" && echo MOVED`, home)
	t.Logf("first session: exit %d\n%s", code, out)
	if code == 125 && strings.Contains(out, "a directory above the source") {
		return // refused: the agent's user could move the source
	}
	out, code = e.RunSession("--intent", "INT-001", "--", "sh", "-c",
		`echo ran > src/ran.txt; echo pwned-after-the-move >> "$0/README.md" && echo WROTE`, moved)
	t.Logf("second session: exit %d\n%s", code, out)
	if b, err := os.ReadFile(filepath.Join(moved, "README.md")); err == nil && string(b) != "human readme\n" {
		t.Fatalf("a later session wrote the source directly after an earlier one moved it away from its covered path: %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(src, "README.md")); err == nil && string(b) != "human readme\n" {
		t.Fatalf("README.md is %q", b)
	}
}

// After moving the source's parent away (above), the daemon still writes
// its sidecars (intent_map.md, the lessons file) by the source's old path,
// as root, following directory symlinks: a session that leaves a symlink
// at SRC/.orchestration makes the daemon create and replace files as root
// in any directory the agent names.
func TestSessionCannotRedirectTheDaemonsSidecarWrites(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	e, base, home, _ := mountInAgentsHome(t)
	victim := filepath.Join(base, "root-owned")
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	out, code := e.RunSession("--intent", "INT-001", "--", "sh", "-c",
		`(cd "$0" && mv work work.old && mkdir -p work/proj && ln -s "$1" work/proj/.orchestration && echo PLANTED)
		 for i in 1 2 3; do echo $i > src/n$i.txt; done; echo x > README.md; cat .intentfs/context >/dev/null`, home, victim)
	t.Logf("exit %d\n%s", code, out)
	if code == 125 && strings.Contains(out, "a directory above the source") {
		return // refused: the agent's user could move the source
	}
	if _, err := os.Stat(filepath.Join(home, "work.old", "proj", "src", "n3.txt")); err != nil {
		t.Fatalf("the session did not run its changes: %v", err)
	}
	// The daemon rewrites intent_map.md within a second of a change.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if ents, _ := os.ReadDir(victim); len(ents) > 0 {
			var names []string
			for _, en := range ents {
				names = append(names, en.Name())
			}
			t.Fatalf("the daemon wrote %v into %s, a directory the agent pointed SRC/.orchestration at", names, victim)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Worse than the sidecars: the daemon reloads the policy by the source's
// path. A session that moves the source's parent away and writes its own
// .orchestration/active_intents.yaml at the old path has its policy
// loaded within a second: its pinned intent now owns "**".
func TestSessionCannotSwapThePolicyByMovingTheSource(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	e, _, home, _ := mountInAgentsHome(t)
	const forged = `active_intents:
  - id: INT-001
    name: source work
    status: IN_PROGRESS
    owned_scope: ["**"]
`
	out, code := e.RunSession("--intent", "INT-001", "--", "sh", "-c",
		`(cd "$0" && mv work work.old && mkdir -p work/proj/.orchestration && printf '%s' "$1" > work/proj/.orchestration/active_intents.yaml && echo PLANTED)
		 # The daemon reloads the policy within a second or so: retry until it has.
		 i=0; until echo pwned-with-a-forged-policy >> README.md 2>/dev/null; do i=$((i+1)); [ $i -gt 300 ] && { echo GAVE-UP; exit 1; }; sleep 0.05; done
		 echo WROTE; head -4 .intentfs/context`, home, forged)
	t.Logf("exit %d\n%s", code, out)
	moved := filepath.Join(home, "work.old", "proj", "README.md")
	if b, err := os.ReadFile(moved); err == nil && string(b) != "human readme\n" {
		t.Fatalf("the daemon loaded a policy the agent wrote at the source's old path, and README.md became %q", b)
	}
	if in := e.D.Snapshot().Intents.Get("INT-001"); in != nil && len(in.OwnedScope) == 1 && in.OwnedScope[0] == "**" {
		t.Fatalf("the daemon's policy is the agent's: INT-001 owns **")
	}
}

// mountInAgentsHome mounts a source at BASE/home/work/proj, where
// everything under BASE/home belongs to the agent's user: the layout of a
// checkout in the human's home when the agent runs as the human. BASE is
// root's and is removed when the test ends.
func mountInAgentsHome(t *testing.T) (e *testenv.Env, base, home, src string) {
	t.Helper()
	base, err := os.MkdirTemp("", "intentfs-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	home = filepath.Join(base, "home")
	src = filepath.Join(home, "work", "proj")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	seed := map[string]string{"README.md": "human readme\n", "src/a.txt": "a\n"}
	e = testenv.MountAt(t, src, testenv.SessionPolicy, "INT-005", seed, func(string) {
		if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", testenv.AgentUID, testenv.AgentGID), home).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v\n%s", err, out)
		}
	})
	return e, base, home, src
}

// TestSessionScratchIsBounded: the session's private /tmp, /var/tmp and
// /dev/shm are bounded (tmpfs's default, half of memory each, let an
// agent take a machine and a half of memory), by --tmp-size.
func TestSessionScratchIsBounded(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	mem := uint64(si.Totalram) * uint64(si.Unit)
	sizes := func(args ...string) []uint64 {
		out, code := e.RunSession(append(args, "--", "sh", "-c", `for d in /tmp /var/tmp /dev/shm; do stat -f -c '%b %S' $d; done`)...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		var got []uint64
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var blocks, bsize uint64
			if _, err := fmt.Sscanf(line, "%d %d", &blocks, &bsize); err != nil {
				continue // the session's own messages
			}
			got = append(got, blocks*bsize)
		}
		if len(got) != 3 {
			t.Fatalf("sizes of the scratch directories: %q", out)
		}
		return got
	}
	for _, s := range sizes("--intent", "INT-001") {
		if s > mem/10+1<<20 {
			t.Fatalf("a scratch directory has %d bytes, more than a tenth of memory (%d)", s, mem)
		}
	}
	for _, s := range sizes("--intent", "INT-001", "--tmp-size", "64m") {
		if s != 64<<20 {
			t.Fatalf("--tmp-size 64m gave a scratch directory of %d bytes", s)
		}
	}
	if out, code := e.RunSession("--intent", "INT-001", "--tmp-size", "1g,mode=777", "--", "true"); code == 0 || !strings.Contains(out, "--tmp-size") {
		t.Fatalf("a --tmp-size with tmpfs options was taken (exit %d):\n%s", code, out)
	}
}
