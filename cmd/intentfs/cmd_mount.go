package main

import (
	"github.com/intentfs/intentfs/internal/registry"

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
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/daemon"
	orchestration "github.com/intentfs/intentfs/internal/workspace" // renamed: this package has a type workspace
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
It refuses to start without a valid policy, or if SOURCE is already mounted.

Run as root, the mount serves every user, and the kernel checks each
caller's permissions against the source's (allow_other, default_permissions).

Examples:
  intentfs mount ./repo /workspace
  intentfs mount ./repo /workspace --intent INT-001
  intentfs mount ./repo /workspace --foreground     # in containers; Ctrl-C unmounts`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("intent", "", "select this intent at start")
			fs.Bool("foreground", false, "stay attached; unmount cleanly on SIGINT/SIGTERM")
			fs.Bool("fail-open", false, "allow changes that cannot be decided (default: deny them)")
			fs.Bool("debug", false, "log every FUSE request")
			fs.Int64("ledger-max-bytes", 256<<20, "rotate the ledger to agent_trace.N.jsonl at this size")
			fs.Int64("keep-max-bytes", 64<<20, "keep pre-images of files up to this size; above it only hashes (0: keep none, no undo)")
			fs.String("lessons-file", orchestration.DefaultLessonsFile, "the file in .orchestration/ that lessons are appended to (e.g. AGENT.md)")
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

	// Check the policy here too, so its errors reach the user's terminal
	// even when the daemon would start in the background.
	if _, _, err := policy.LoadIntents(filepath.Join(source, policy.IntentsFile)); err != nil {
		return err
	}
	if !fg {
		return startBackground(a, source, mountpoint)
	}
	cfg := daemon.Config{Source: source, Mountpoint: mountpoint, Intent: intent, FailOpen: failOpen, Debug: debug,
		Version: version, Log: slog.New(slog.NewTextHandler(a.stderr, nil)), Registry: registry.DefaultRegistry(),
		OwnerUID: os.Getuid(), OwnerGID: os.Getgid(), LessonsFile: flagString(a, "lessons-file")}
	cfg.LedgerMaxBytes, _ = a.fs.GetInt64("ledger-max-bytes")
	cfg.KeepMaxBytes, _ = a.fs.GetInt64("keep-max-bytes")
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
	return d.Close()
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
	reg := registry.DefaultRegistry()
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
	_, _, logPath := reg.Paths(absMnt)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening daemon log: %w", err)
	}
	defer logFile.Close()
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
		return errors.New(strings.ReplaceAll(strings.TrimPrefix(line, "error: "), "\\n", "\n"))
	}
	_ = cmd.Wait()
	return fmt.Errorf("the daemon exited before the mount was ready; its log %s ends with:\n%s", logPath, tail(logPath, 10))
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, _ := f.Stat()
	off := max(st.Size()-8192, 0)
	f.Seek(off, io.SeekStart)
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func unmountCmd() *command {
	return &command{
		name: "unmount", summary: "flush the ledger and unmount", usage: "[MOUNTPOINT]",
		help: `Asks the daemon to unmount; returns once the ledger is flushed to disk and the
mount is gone. Without MOUNTPOINT: the mount containing the current
directory, else the only mount running.

Examples:
  intentfs unmount /workspace
  intentfs unmount`,
		flags: func(fs *pflag.FlagSet) { fs.String("mount", "", "the mountpoint (same as the argument)") },
		run: func(a *app, args []string) error {
			mnt, _ := a.fs.GetString("mount")
			if len(args) > 1 {
				return usagef("expected at most one MOUNTPOINT")
			}
			if len(args) == 1 {
				mnt = args[0]
			}
			e, err := findMount(mnt)
			if err != nil {
				return err
			}
			if _, err := call(e, control.Request{Op: "unmount"}); err != nil {
				return err
			}
			// The daemon exits right after answering; wait briefly so a
			// script that runs next sees the registry without it.
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) && syscall.Kill(e.Pid, 0) == nil {
				time.Sleep(20 * time.Millisecond)
			}
			fmt.Fprintf(a.stdout, "unmounted %s; ledger flushed\n", e.Mountpoint)
			return nil
		},
	}
}
