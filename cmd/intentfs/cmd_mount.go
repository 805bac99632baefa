package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/daemon"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/otelexport"
	"github.com/intentfs/intentfs/internal/upstream"
	"github.com/intentfs/intentfs/internal/workspace"
	"github.com/intentfs/intentfs/policy"
)

// readyFdEnv names the descriptor on which a background daemon reports to
// the `intentfs mount` that started it.
const readyFdEnv = "INTENTFS_READY_FD"

func mountCmd() *command {
	return &command{
		name: "mount", summary: "mount a workspace under governance", usage: "SOURCE MOUNTPOINT",
		help: `Mounts SOURCE at MOUNTPOINT. Work in MOUNTPOINT: every change made there is
checked against the active intent and recorded in
SOURCE/.orchestration/agent_trace.jsonl. The command returns once the mount
is ready and the daemon keeps serving in the background (its log is shown).
It refuses to start without a valid policy, if SOURCE is already mounted,
if MOUNTPOINT is already an intentfs mount, if MOUNTPOINT is not empty
(the mount would hide its files; --nonempty mounts over them anyway), or if
SOURCE's .git leads to a git directory the mount cannot govern (a symlink,
a submodule's checkout). A linked worktree (git worktree add) is mounted
with its git directory and the repository's common directory served,
governed, as the mount's .git (see docs/worktrees.md). If the
mount fails, the cause is printed and the daemon's log kept; the log of a
mount that ends in a clean unmount is removed.

Run as root, the mount serves every user, and the kernel checks each
caller's permissions against the source's (allow_other, default_permissions).

--transport chooses how the kernel's requests reach the daemon: "dev" reads
and writes /dev/fuse; "uring" uses FUSE over io_uring (Linux 6.14+, as root,
once switched on: echo Y > /sys/module/fuse/parameters/enable_uring), with
one queue per CPU and a reply and the next request in one system call;
"auto" uses io_uring where the kernel offers it and it is switched on, else
/dev/fuse (also if mounting over io_uring fails). The default is
$INTENTFS_TRANSPORT, else auto. "intentfs status" shows the transport in use.

--data-path chooses how reads and writes of existing files reach the source:
"passthrough" decides every open for writing at open(2) and records at close;
"cached" lets the kernel open files without asking the daemon, serves reads
from the page cache, and decides a change at the request that makes it (the
first write(2) of a process to a file, a truncate, fallocate, ...), recording
it once the file's writes pause for 200 ms or before a select, status or
unmount. The default is $INTENTFS_DATA_PATH, else passthrough. See
docs/performance.md for what each costs and what the cached path refuses.

--upstream-known-hosts FILE names the host keys the fetch of the policy's
declared upstream trusts over ssh, besides /etc/ssh/ssh_known_hosts; no other
known_hosts counts (not the ~/.ssh/known_hosts of the repository's owner, who
may be the agent) and an unknown host key fails the fetch. FILE and its
directories must belong to root or to you and not be writable by others.
Example: intentfs mount --upstream-known-hosts /etc/intentfs/known_hosts ./repo ./ws

--otlp-endpoint (or the standard OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL and
OTEL_EXPORTER_OTLP_HEADERS variables) streams every ledger record to an
OpenTelemetry Collector as an OTLP log record with OCSF File System Activity
attributes. The stream is a copy: when the collector is slow or down, records
are dropped and counted ("intentfs status"), never waited for; the ledger
stays the record. Command lines stay on the machine unless --otlp-cmdline.
See docs/otel.md.

--signing-key FILE signs the ledger: the daemon reads the SSH private key
once at start (a regular file, not a symlink, mode 0600, owned by root or
by you, outside SOURCE and MOUNTPOINT, without a passphrase) and keeps it in
memory; it writes signed checkpoints over the chain's head every 1000
records or 30 seconds while records come, with every notes sync and at
unmount. intentfs check and intentfs verify --notes count, when an
allowed-signers file is configured, only records a checkpoint of an
allowed signer covers. Without it, records are unsigned ("intentfs status"
says so). See docs/signing.md.

Examples:
  sudo intentfs mount ./repo /workspace
  sudo intentfs mount ./repo /workspace --intent INT-001
  intentfs mount ./repo /workspace --foreground          # in a container, as its root; Ctrl-C unmounts
  sudo intentfs mount ./repo /workspace --transport uring
  sudo intentfs mount ./repo /workspace --data-path cached
  sudo intentfs mount ./repo /workspace --otlp-endpoint http://localhost:4318
  OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc sudo -E intentfs mount ./repo /workspace
  sudo intentfs mount --signing-key /etc/intentfs/signing_key ./repo /workspace`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("intent", "", "select this intent at start")
			fs.Bool("foreground", false, "stay attached; unmount cleanly on SIGINT/SIGTERM")
			fs.Bool("fail-open", false, "allow changes that cannot be decided (default: deny them)")
			fs.Bool("debug", false, "log every FUSE request")
			fs.Int64("ledger-max-bytes", 256<<20, "rotate the ledger to agent_trace.N.jsonl at this size")
			fs.Int64("keep-max-bytes", 64<<20, "keep pre-images of files up to this size; above it only hashes (0: keep none, no undo); the one way to let changes go ahead without undo")
			fs.Int64("store-max-bytes", 0, "bound the pre-images the daemon copies into the object store at this many bytes (0: 10% of its filesystem, at most 2 GiB); a change whose pre-image does not fit, or would take space only root may use, is refused (PREIMAGE_UNAVAILABLE) until intentfs gc frees room")
			fs.String("lessons-file", workspace.DefaultLessonsFile, "the file in .orchestration/ that lessons are appended to (e.g. AGENT.md)")
			fs.String("agent-files", "auto", `workspace-root files in which intentfs keeps a marked section with the agent guide and recent lessons: "auto" (CLAUDE.md and AGENTS.md where present, else a new CLAUDE.md), "none", or names such as "CLAUDE.md,AGENTS.md"`)
			fs.String("transport", defaultTransport(), `how FUSE requests reach the daemon: "auto", "uring" (FUSE over io_uring) or "dev" (/dev/fuse)`)
			fs.String("data-path", defaultDataPath(), `how reads and writes of existing files reach the source: "passthrough" or "cached"`)
			fs.String("upstream-known-hosts", "", "a known_hosts file (owned by root or you, not writable by others) whose host keys the declared upstream's ssh fetch trusts besides /etc/ssh/ssh_known_hosts")
			fs.Bool("nonempty", false, "mount over a MOUNTPOINT that has files of its own (hidden while mounted)")
			fs.String("otlp-endpoint", "", "stream the ledger's records to this OTLP receiver URL (default: $OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, $OTEL_EXPORTER_OTLP_ENDPOINT; none: no export)")
			fs.String("otlp-protocol", "", `OTLP protocol: "http" (http/protobuf, port 4318) or "grpc" (port 4317) (default: $OTEL_EXPORTER_OTLP_PROTOCOL, else http)`)
			fs.Bool("otlp-cmdline", false, "also export each process's command line and executable (they stay on the machine by default)")
			fs.StringArray("signing-key", nil, "sign the ledger with this SSH private key (as git's gpg.format=ssh uses; mode 0600, owned by root or you, outside the workspace); repeat it to sign with an old and a new key while rotating (see docs/signing.md)")
		},
		run: runMount,
	}
}

func runMount(a *app, args []string) error {
	if len(args) != 2 {
		return usagef("expected SOURCE and MOUNTPOINT")
	}
	source, mountpoint := args[0], args[1]
	intent, _ := a.fs.GetString("intent")
	fg, _ := a.fs.GetBool("foreground")
	failOpen, _ := a.fs.GetBool("fail-open")
	debug, _ := a.fs.GetBool("debug")

	if _, err := daemon.ParseTransport(flagString(a, "transport")); err != nil {
		return usagef("--transport: %v", err)
	}
	dataPath, err := daemon.ParseDataPath(flagString(a, "data-path"))
	if err != nil {
		return usagef("--data-path: %v", err)
	}
	knownHosts := flagString(a, "upstream-known-hosts")
	if knownHosts != "" {
		abs, err := filepath.Abs(knownHosts)
		if err != nil {
			return usagef("--upstream-known-hosts: %v", err)
		}
		// Checked here too, so that the error reaches the terminal.
		if err := upstream.CheckKnownHosts(abs); err != nil {
			return err
		}
		knownHosts = abs
	}
	export, err := otelexport.Resolve(os.Getenv, flagString(a, "otlp-endpoint"), flagString(a, "otlp-protocol"))
	if err != nil {
		return usagef("%v", err)
	}
	if export != nil {
		export.Fields.Cmdline, _ = a.fs.GetBool("otlp-cmdline")
	}
	// Check the policy here too, so its errors reach the user's terminal
	// even when the daemon would start in the background.
	if _, _, err := policy.LoadIntents(filepath.Join(source, policy.IntentsFile)); err != nil {
		return err
	}
	if !fg {
		return startBackground(a, source, mountpoint)
	}
	logOut := a.stderr
	if os.Getenv(readyFdEnv) != "" {
		// Started in the background: stderr is the mount's log file,
		// which must not grow without bound.
		logOut = newCappedLog(maxDaemonLogBytes)
	}
	cfg := daemon.Config{Source: source, Mountpoint: mountpoint, Intent: intent, FailOpen: failOpen, Debug: debug,
		Version: version, Log: slog.New(slog.NewTextHandler(logOut, nil)), Registry: mounts.DefaultRegistry(),
		OwnerUID: os.Getuid(), OwnerGID: os.Getgid(), LessonsFile: flagString(a, "lessons-file"),
		AgentFiles: flagString(a, "agent-files")}
	cfg.AllowNonEmpty, _ = a.fs.GetBool("nonempty")
	cfg.Export = export
	cfg.Transport, _ = daemon.ParseTransport(flagString(a, "transport")) // checked above
	cfg.UpstreamKnownHosts = knownHosts
	cfg.DataPath = dataPath
	cfg.LedgerMaxBytes, _ = a.fs.GetInt64("ledger-max-bytes")
	cfg.SigningKeys, _ = a.fs.GetStringArray("signing-key")
	cfg.KeepMaxBytes, _ = a.fs.GetInt64("keep-max-bytes")
	cfg.StoreMaxBytes, _ = a.fs.GetInt64("store-max-bytes")
	if cfg.KeepMaxBytes <= 0 {
		cfg.KeepMaxBytes = -1 // the daemon's "none"; its 0 means the default
	}
	ready := readyPipe()
	daemon.SetProcessUmask()
	// The handler is in place before the mount is announced, so a
	// SIGTERM right after "mounted" still unmounts cleanly.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	d, err := daemon.Start(cfg)
	if err != nil {
		if ready != nil {
			fmt.Fprintf(ready, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", "\\n"))
			ready.Close()
		}
		return err
	}
	if ready != nil {
		fmt.Fprintf(ready, "ready %d\n", os.Getpid())
		ready.Close()
	} else {
		fmt.Fprintf(a.stdout, "mounted %s at %s (pid %d); Ctrl-C to unmount\n", d.Source(), d.Mountpoint(), os.Getpid())
	}
	go func() {
		for range sigs {
			if err := d.Unmount(); err != nil {
				cfg.Log.Error("unmount on signal failed", "err", err)
			}
		}
	}()
	d.Wait()
	if err := d.Close(); err != nil {
		return err
	}
	if ready != nil {
		// A background daemon's output is its log (see startBackground);
		// after a clean unmount nobody needs it, and logs would pile up.
		_, _, logPath := cfg.Registry.Paths(d.Mountpoint())
		if err := os.Remove(logPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			cfg.Log.Warn("removing the log of a clean unmount failed", "log", logPath, "err", err)
		}
	}
	return nil
}

func readyPipe() *os.File {
	v := os.Getenv(readyFdEnv)
	if v == "" {
		return nil
	}
	os.Unsetenv(readyFdEnv)
	fd, err := strconv.Atoi(v)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), "ready")
}

// startBackground re-runs this command with --foreground in a new session,
// its output going to the mount's log file, and waits for it to report.
func startBackground(a *app, source, mountpoint string) error {
	reg := mounts.DefaultRegistry()
	if err := reg.Ensure(); err != nil {
		return err
	}
	absMnt, err := filepath.Abs(mountpoint)
	if err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(absMnt); err == nil {
		absMnt = resolved
	}
	// Refused here, before the daemon starts: its log is named after the
	// mountpoint, and a live mount's log is not this attempt's to write.
	nonEmpty, _ := a.fs.GetBool("nonempty")
	if err := daemon.CheckMountpoint(absMnt, nonEmpty); err != nil {
		return err
	}
	_, _, logPath := reg.Paths(absMnt)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening daemon log: %w", err)
	}
	defer logFile.Close()
	// What this attempt writes starts here: fusermount3, for one, says why
	// it failed only on the daemon's stderr.
	logStart, _ := logFile.Seek(0, io.SeekEnd)
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	args := append([]string{"mount", "--foreground"}, a.rawArgs...)
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Env = append(os.Environ(), readyFdEnv+"=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("starting the daemon: %w", err)
	}
	pw.Close()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	pr.Close()
	line = strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(line, "ready"):
		fmt.Fprintf(a.stdout, "mounted %s at %s (pid %d)\nlog: %s\n", source, absMnt, cmd.Process.Pid, logPath)
		_ = cmd.Process.Release()
		return nil
	case strings.HasPrefix(line, "error: "):
		_ = cmd.Wait()
		msg := strings.TrimSpace(strings.ReplaceAll(strings.TrimPrefix(line, "error: "), "\\n", "\n"))
		if said := logSince(logPath, logStart, 10, firstLine(msg)); said != "" {
			msg += fmt.Sprintf("\nthe daemon's log %s says:\n%s", logPath, said)
		}
		return errors.New(msg + mountHint(msg))
	}
	_ = cmd.Wait()
	said := logSince(logPath, logStart, 10, "")
	return fmt.Errorf("the daemon exited before the mount was ready; its log %s ends with:\n%s%s", logPath, said, mountHint(said))
}

// mountHint explains a failure of fusermount3, which mounts for users
// other than root.
func mountHint(msg string) string {
	if os.Geteuid() == 0 || !strings.Contains(msg, "fusermount") {
		return ""
	}
	return fmt.Sprintf("\nhint: as uid %d the mount goes through fusermount3, which needs a /dev/fuse it may open and a MOUNTPOINT this user owns; or mount as root", os.Geteuid())
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// logSince returns the last n lines written to the log at path from
// offset start on, indented and escaped for the terminal; lines holding
// skip (the error already shown) are left out.
func logSince(path string, start int64, n int, skip string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	// Only the end is shown; a daemon that wrote megabytes is cut short.
	start = max(start, st.Size()-8192)
	b, err := io.ReadAll(io.NewSectionReader(f, start, st.Size()-start))
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if skip == "" || !strings.Contains(l, skip) {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = "  " + escapeTerminal(l)
	}
	return strings.Join(lines, "\n")
}

// transportEnv overrides the default transport of `intentfs mount` (the
// test suite runs once per transport with it).
const transportEnv = "INTENTFS_TRANSPORT"

// dataPathEnv overrides the default data path of `intentfs mount` (the
// test suite runs the fence tests on each path with it).
const dataPathEnv = "INTENTFS_DATA_PATH"

func defaultDataPath() string {
	if p := os.Getenv(dataPathEnv); p != "" {
		return p
	}
	return daemon.DefaultDataPath
}

func defaultTransport() string {
	if t := os.Getenv(transportEnv); t != "" {
		return t
	}
	return daemon.DefaultTransport
}
