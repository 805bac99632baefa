// Package container is the entrypoint of intentfs's container image
// (`intentfs container`): it checks that the container was given what a
// FUSE mount needs, mounts the source (/src, bind-mounted from the host)
// at the workspace (/workspace), runs the agent's command there as a
// sealed session of the mount (see internal/runner) as an unprivileged
// user with the source owner's ids, passes signals on, and on exit ends
// the session, unmounts, flushes the ledger and returns the command's
// exit status. The daemon runs in this process, root in the container;
// the agent never sees /src, the daemon's control socket or its
// processes.
package container

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/internal/daemon"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/runner"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// ExitCannotRun is the status when the command never ran: the container
// lacks a flag, the source has no policy, the session was refused.
// Container engines use 125 for "the runtime failed" too. It is also the
// status of a command that succeeded when the unmount or the ledger's
// flush failed afterwards (see finish).
const ExitCannotRun = 125

// DefaultStopGrace is how long the command has, after the container gets
// SIGTERM (docker stop), before its session is ended: shorter than
// Docker's and podman's 10 s, so that the session's end is recorded and
// the ledger flushed before the engine kills the container.
const DefaultStopGrace = 7 * time.Second

// Options configure one run of the entrypoint.
type Options struct {
	// Source is the host's checkout (default /src), Mountpoint where the
	// agent works (default /workspace).
	Source, Mountpoint string
	// Intent, if set, pins the agent's session to it.
	Intent string
	// Name names the session (intentfs sessions).
	Name string
	// Identity chooses the agent's uid and gid.
	Identity Identity
	// Argv is the command; empty runs a shell.
	Argv []string
	// Transport and AgentFiles are as for intentfs mount.
	Transport, AgentFiles string
	// SigningKeys are as for intentfs mount --signing-key: in a
	// container, a secret mounted into it, owned by root.
	SigningKeys []string
	// Version is recorded in the ledger.
	Version string
	// Log receives the daemon's log.
	Log *slog.Logger
	// Env is the environment the command's is made from.
	Env []string
	// StopGrace is how long the command may take to exit after SIGTERM
	// before its session is ended (default DefaultStopGrace).
	StopGrace time.Duration

	// Etc and Home replace /etc and /home, where the agent's account is
	// made (tests, which must not change the machine's accounts).
	Etc, Home string

	// host replaces the container checks in tests.
	host *host
}

// Run mounts, runs the command and unmounts. It returns the command's
// exit status; an error means the command never ran (status
// ExitCannotRun), or the unmount or the ledger failed after it ran (see
// finish for the status then).
func Run(o Options) (int, error) {
	o = withDefaults(o)
	// The umask the container was started with, for the agent's command:
	// the daemon's is 0 from here on.
	umask := runner.SessionUmask(runner.CurrentUmask())
	// A signal before the session starts stops the start; during the
	// session runner.Launch passes it on to the command, and SIGTERM
	// starts the stop grace (see endAfterGrace).
	var stopped atomic.Value
	terminated := make(chan struct{})
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		var once sync.Once
		for s := range sigs {
			stopped.CompareAndSwap(nil, s)
			if s == syscall.SIGTERM {
				once.Do(func() { close(terminated) })
			}
		}
	}()
	interrupted := func() (int, error) {
		if s, ok := stopped.Load().(syscall.Signal); ok {
			return 128 + int(s), fmt.Errorf("stopped by %v before the agent's command started", s)
		}
		return 0, nil
	}

	if os.Geteuid() != 0 {
		return ExitCannotRun, errors.New("the entrypoint runs as root in the container (it mounts, and then runs the agent as an unprivileged user); " +
			"do not pass --user to docker run, set INTENTFS_UID/INTENTFS_GID instead")
	}
	h := realHost()
	if o.host != nil {
		h = *o.host
	}
	if err := preflight(h); err != nil {
		return ExitCannotRun, err
	}
	if err := checkSource(o.Source); err != nil {
		return ExitCannotRun, err
	}
	export, err := auditExport(o.Env)
	if err != nil {
		return ExitCannotRun, err
	}
	uid, gid, err := resolveIdentity(o.Identity, o.Source)
	if err != nil {
		return ExitCannotRun, err
	}
	u, err := ensureAccount(o.Etc, o.Home, uid, gid)
	if err != nil {
		return ExitCannotRun, err
	}
	if err := runner.CheckAncestors(o.Source, u); err != nil {
		return ExitCannotRun, err
	}
	if err := os.MkdirAll(o.Mountpoint, 0o755); err != nil {
		return ExitCannotRun, fmt.Errorf("making the mountpoint %s: %w", o.Mountpoint, err)
	}
	if code, err := interrupted(); err != nil {
		return code, err
	}

	daemon.SetProcessUmask()
	// /run/intentfs in a container ($INTENTFS_RUNTIME_DIR in tests), so
	// docker exec ... intentfs status finds the mount.
	reg := mounts.DefaultRegistry()
	d, err := daemon.Start(daemon.Config{Source: o.Source, Mountpoint: o.Mountpoint, Version: o.Version, Log: o.Log,
		Registry: reg, OwnerUID: 0, OwnerGID: 0, Transport: o.Transport, AgentFiles: o.AgentFiles,
		SigningKeys: o.SigningKeys, Export: export})
	if err != nil {
		return ExitCannotRun, fmt.Errorf("mounting %s at %s: %w", o.Source, o.Mountpoint, err)
	}
	closed := make(chan error, 1)
	go func() {
		d.Wait()
		closed <- d.Close()
	}()
	launched, graceDone := make(chan struct{}), make(chan struct{})
	go func() {
		endAfterGrace(terminated, launched, o.StopGrace, d.EndSessions, o.Log)
		close(graceDone)
	}()
	code, runErr := ExitCannotRun, error(nil)
	if c, err := interrupted(); err != nil {
		code, runErr = c, err
	} else {
		code, runErr = launch(o, d, u, reg, umask)
	}
	close(launched)
	// A session being ended is ended (and its end recorded) before the
	// unmount, and the entrypoint does not exit in the middle of it.
	<-graceDone
	unmountErr := d.Unmount()
	var closeErr error
	if unmountErr == nil {
		closeErr = <-closed
	}
	return finish(code, runErr, unmountErr, closeErr, o.Mountpoint)
}

// endAfterGrace ends the agent's session (end: SIGKILL to every process
// of it) when the command has not exited within grace of the container's
// SIGTERM, so that the session's end is recorded and the mount comes
// down cleanly before the engine's own grace runs out and it kills the
// daemon too. It returns once the command has exited (launched closed).
func endAfterGrace(terminated, launched <-chan struct{}, grace time.Duration, end func() int, log *slog.Logger) {
	select {
	case <-terminated:
	case <-launched:
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-t.C:
		// Said first: once the session is gone, the entrypoint unmounts
		// and exits.
		log.Error("the agent's command did not exit within the stop grace after SIGTERM; ending its session (SIGKILL)",
			"grace", grace)
		end()
	case <-launched:
	}
}

// finish is the entrypoint's status and error once the command has run:
// the command's status, unless the unmount or the ledger's flush failed.
// Then the records of the command's changes may be incomplete, which a
// status of 0 would hide: a command that succeeded gives ExitCannotRun
// (125), one that failed keeps its own non-zero status, and the error
// says what failed.
func finish(code int, runErr, unmountErr, closeErr error, mountpoint string) (int, error) {
	var errs []error
	if unmountErr != nil {
		errs = append(errs, fmt.Errorf("unmounting %s (the ledger may lack the last records): %w", mountpoint, unmountErr))
	}
	if closeErr != nil {
		errs = append(errs, fmt.Errorf("flushing and closing the ledger (it may lack the last records): %w", closeErr))
	}
	if len(errs) == 0 {
		return code, runErr
	}
	if code == 0 {
		code = ExitCannotRun
		errs = append(errs, errors.New("the command succeeded, but the exit status is 125 because its changes may not all be recorded"))
	}
	return code, errors.Join(append([]error{runErr}, errs...)...)
}

// launch runs the command as a session of d.
func launch(o Options, d *daemon.Daemon, u runner.User, reg mounts.Registry, umask *uint32) (int, error) {
	argv := o.Argv
	if len(argv) == 0 {
		argv = []string{defaultShell()}
	}
	mp := d.Mountpoint()
	spec := agent.Spec{Name: o.Name, User: u.Name, Uid: u.Uid, Gid: u.Gid, Intent: o.Intent, Pinned: o.Intent != ""}
	by := &ledger.Process{Pid: uint32(os.Getpid()), Comm: "intentfs container"}
	// /run/intentfs holds the control socket and the registry; /run/user
	// nothing of the agent's. The source is hidden by the seal itself.
	hide := []string{reg.Dir, "/run/intentfs"}
	// The repository's linked worktrees elsewhere (another agent's, a
	// human's) are hidden like the source.
	covers, err := runner.RepositoryCovers(d.Source(), mp, u)
	if err != nil {
		return ExitCannotRun, err
	}
	hide = append(hide, covers...)
	code, err := runner.Launch(runner.Options{
		Config: runner.Config{Mountpoint: mp, Dir: mp, Source: d.Source(), Hide: hide,
			Uid: u.Uid, Gid: u.Gid, Groups: u.Groups, Env: runner.Environment(agentEnv(o.Env), u, mp, mp), Argv: argv,
			Umask: umask},
		Register: func(pid int) (string, error) {
			spec.RootPid = pid
			info, err := d.StartSession(spec, by)
			if err != nil {
				return "", err
			}
			return info.ID, nil
		},
	})
	if err != nil {
		return ExitCannotRun, err
	}
	return code, nil
}

// agentEnv is the entrypoint's environment without what configures it,
// and without the audit stream's headers: they carry the collector's
// credential, with which an agent could send the collector records of its
// own making.
func agentEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		switch {
		case hasKey(kv, "INTENTFS_UID"), hasKey(kv, "INTENTFS_GID"), hasKey(kv, "INTENTFS_INTENT"), hasKey(kv, "INTENTFS_STOP_GRACE"),
			hasKey(kv, "INTENTFS_INIT_NEXT"):
			continue
		case isAuditCredential(kv):
			continue
		}
		out = append(out, kv)
	}
	return out
}

func hasKey(kv, key string) bool { return strings.HasPrefix(kv, key+"=") }

func defaultShell() string {
	if _, err := os.Stat("/bin/bash"); err == nil {
		return "/bin/bash"
	}
	return "/bin/sh"
}

// checkSource refuses a source that is missing or has no policy, and
// says how to make one.
func checkSource(source string) error {
	st, err := os.Stat(source)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist: bind-mount the checkout there with -v \"$PWD:%s\"", source, source)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory: bind-mount the checkout there with -v \"$PWD:%s\"", source, source)
	}
	if _, err := os.Stat(filepath.Join(source, policy.IntentsFile)); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s has no %s: intentfs needs the intents the agent may work on. Make one in the checkout "+
			"(as yourself, so the files are yours):\n"+
			"  docker run --rm -v \"$PWD:/src\" --user \"$(id -u):$(id -g)\" --entrypoint intentfs IMAGE init /src\n"+
			"then edit .orchestration/active_intents.yaml (set an intent's status to IN_PROGRESS and its owned_scope) "+
			"and start the container again", source, policy.IntentsFile)
	}
	return nil
}

func withDefaults(o Options) Options {
	if o.Source == "" {
		o.Source = "/src"
	}
	if o.Mountpoint == "" {
		o.Mountpoint = "/workspace"
	}
	if o.Etc == "" {
		o.Etc = "/etc"
	}
	if o.Home == "" {
		o.Home = "/home"
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	return o
}
