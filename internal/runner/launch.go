package runner

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Options start a session.
type Options struct {
	Config
	// Register tells the daemon about the session once its namespaces are
	// sealed, and returns the session's id. rootPid is the session's
	// first process. An error refuses the session: the command never runs.
	Register func(rootPid int) (string, error)
	// Started, if set, is told the session's id once the command starts.
	Started func(id string)
	// Self is the intentfs executable to start as the first process
	// (default /proc/self/exe).
	Self string
}

// Launch runs a session and returns the command's exit status. An error
// means the command never ran.
func Launch(o Options) (int, error) {
	if os.Geteuid() != 0 {
		return exitCannotRun, errors.New("intentfs run needs root: it makes a mount namespace in which the source is hidden (run it with sudo; the agent itself runs as --user)")
	}
	self := o.Self
	if self == "" {
		self = "/proc/self/exe"
	}
	// Descriptors this process inherited without close-on-exec (from a
	// careless parent) would reach the session's first process and, from
	// there, the agent: one on the source would lead past every cover.
	if err := cloexecFrom(3, unix.CloseRange); err != nil {
		return exitCannotRun, fmt.Errorf("closing inherited descriptors: %w", err)
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return exitCannotRun, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		return exitCannotRun, err
	}
	goR, goW, err := os.Pipe()
	if err != nil {
		return exitCannotRun, err
	}
	cmd := exec.Command(self, InitArg)
	cmd.Args[0] = "intentfs-session"
	cmd.Env = []string{} // the first process needs none; the command's is in the config
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{cfgR, repW, goR}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		// If intentfs run is killed, so is the session.
		Pdeathsig: syscall.SIGKILL,
		// A session of its own, so the agent has no way to the caller's
		// controlling terminal (see terminal).
		Setsid: true,
	}
	var term *terminal
	if isTerminal(0) {
		if term, err = openTerminal(); err != nil {
			return exitCannotRun, err
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = term.slave, term.slave, term.slave
		cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, 0
	}
	// Signals are passed on from before the start, so none is lost.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded()...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		if term != nil {
			term.slave.Close()
			term.finish()
		}
		return exitCannotRun, fmt.Errorf("starting the session: %w", err)
	}
	if term != nil {
		term.slave.Close()
		if err := term.start(os.Stdin, os.Stdout); err != nil {
			_ = cmd.Process.Kill()
		}
		defer term.finish()
	}
	cfgR.Close()
	repW.Close()
	goR.Close()
	kill := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	err = json.NewEncoder(cfgW).Encode(o.Config)
	cfgW.Close()
	if err != nil {
		kill()
		return exitCannotRun, fmt.Errorf("configuring the session: %w", err)
	}
	report := bufio.NewReader(io.LimitReader(repR, 64<<10))
	line, err := report.ReadString('\n')
	line = strings.TrimSpace(line)
	switch {
	case err != nil && line == "":
		kill()
		return exitCannotRun, errors.New("the session's first process ended before it could seal the session")
	case strings.HasPrefix(line, msgError):
		kill()
		return exitCannotRun, fmt.Errorf("sealing the session: %s", strings.TrimPrefix(line, msgError))
	case line != msgSealed:
		kill()
		return exitCannotRun, fmt.Errorf("the session's first process said %q", line)
	}
	id, err := o.Register(cmd.Process.Pid)
	if err != nil {
		kill()
		return exitCannotRun, err
	}
	if _, err := fmt.Fprintln(goW, id); err != nil {
		kill()
		return exitCannotRun, fmt.Errorf("starting the session's command: %w", err)
	}
	goW.Close()
	repR.Close()
	if o.Started != nil {
		o.Started(id)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGWINCH && term != nil {
				term.resize() // the session's terminal tells its own group
				continue
			}
			_ = cmd.Process.Signal(s)
		case err := <-done:
			return exitStatus(cmd, err)
		}
	}
}

// exitStatus is the session's exit status as a shell reports it.
func exitStatus(cmd *exec.Cmd, err error) (int, error) {
	ps := cmd.ProcessState
	if ps == nil {
		return exitCannotRun, err
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ps.ExitCode(), nil
}
