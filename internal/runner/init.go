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
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxConfig bounds the configuration read from the parent.
const maxConfig = 4 << 20

// forwarded returns the signals intentfs run and the session's first
// process pass on to the command.
func forwarded() []os.Signal {
	return []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}
}

// Init is the session's first process: pid 1 of the session's pid
// namespace, root in its own mount namespace. It reads its Config from
// fd 3, seals the namespace, reports on fd 4, waits for the go-ahead (the
// session's id) on fd 5, then runs the command, reaps every orphan of the
// session, passes signals on, and returns the command's exit status.
// When it returns, the kernel ends every process left in the session.
func Init() int {
	cfgIn, report, goIn := os.NewFile(3, "config"), os.NewFile(4, "report"), os.NewFile(5, "go")
	fail := func(err error) int {
		fmt.Fprintf(report, "%s%s\n", msgError, strings.ReplaceAll(err.Error(), "\n", " "))
		return exitCannotRun
	}
	if report == nil || cfgIn == nil || goIn == nil {
		fmt.Fprintln(os.Stderr, "intentfs: "+InitArg+" is started by intentfs run, not by hand")
		return exitCannotRun
	}
	if os.Getpid() != 1 {
		return fail(errors.New("the session's first process is not pid 1 of a pid namespace of its own"))
	}
	var cfg Config
	if err := json.NewDecoder(io.LimitReader(cfgIn, maxConfig)).Decode(&cfg); err != nil {
		return fail(fmt.Errorf("reading the session's configuration: %w", err))
	}
	cfgIn.Close()
	if len(cfg.Argv) == 0 {
		return fail(errors.New("no command to run"))
	}
	if err := seal(cfg); err != nil {
		return fail(err)
	}
	fmt.Fprintln(report, msgSealed)
	line, err := bufio.NewReader(io.LimitReader(goIn, 256)).ReadString('\n')
	goIn.Close()
	if err != nil {
		return exitCannotRun // the parent refused the session, or died
	}
	id := strings.TrimSpace(line)
	report.Close()
	env := append(cfg.Env, "INTENTFS_SESSION="+id)
	return runCommand(cfg, env)
}

// runCommand starts the command as the session's user and waits for it,
// reaping every other child the session's processes leave behind.
func runCommand(cfg Config, env []string) int {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded()...)
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)

	path, err := lookPath(cfg.Argv[0], env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "intentfs run: %v\n", err)
		return 127
	}
	cmd := exec.Command(path)
	cmd.Args = cfg.Argv
	cmd.Env = env
	// The command starts in dir, entered here, before the command's
	// credentials apply: the mount is where the agent is meant to work
	// even when a directory above the mountpoint is closed to its user.
	if err := os.Chdir(cfg.Dir); err != nil {
		fmt.Fprintf(os.Stderr, "intentfs run: entering %s: %v\n", cfg.Dir, err)
		return exitCannotRun
	}
	if cfg.Umask != nil {
		syscall.Umask(int(*cfg.Umask & 0o777)) // inherited by the command
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	attr := &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: cfg.Uid, Gid: cfg.Gid, Groups: cfg.Groups},
		// If this process dies, so does the command (and with this
		// process gone, the kernel ends the whole session anyway).
		Pdeathsig: syscall.SIGKILL,
	}
	tty := isTerminal(0)
	if tty {
		// The command gets the terminal: its keys' signals go to the
		// command's group only, as a shell's job control would have it.
		attr.Setpgid, attr.Foreground, attr.Ctty = true, true, 0
	}
	cmd.SysProcAttr = attr
	// Nothing but 0-2 reaches the command, whatever this process was
	// handed (its own pipes to intentfs run are closed by now).
	if err := cloexecFrom(3, unix.CloseRange); err != nil {
		fmt.Fprintf(os.Stderr, "intentfs run: closing descriptors: %v\n", err)
		return exitCannotRun
	}
	pid, err := startNoNewPrivs(cmd)
	if err != nil {
		fmt.Fprintf(os.Stderr, "intentfs run: starting %s: %v\n", cfg.Argv[0], err)
		return 126
	}
	code := -1
	for code < 0 {
		select {
		case s := <-sigs:
			_ = syscall.Kill(pid, s.(syscall.Signal))
		case <-children:
			code = reap(pid)
		}
	}
	if tty {
		// Hand the terminal back to the group intentfs run was started in.
		signal.Ignore(syscall.SIGTTOU)
		_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
	}
	return code
}

// startNoNewPrivs starts cmd with no_new_privs: neither the command nor
// anything it runs may gain privileges through a set-ID program or file
// capabilities. The flag is per thread and inherited at fork, so it is
// set on a locked thread that then forks; that thread is never reused.
func startNoNewPrivs(cmd *exec.Cmd) (int, error) {
	runtime.LockOSThread()
	// The thread keeps no_new_privs and is not unlocked: when this
	// goroutine ends, the runtime ends the thread instead of reusing it.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	return cmd.Process.Pid, nil
}

// reap collects every exited child and returns the command's exit status
// once it has exited, -1 before.
func reap(cmdPid int) int {
	code := -1
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return code
		}
		if pid != cmdPid {
			continue
		}
		switch {
		case ws.Exited():
			code = ws.ExitStatus()
		case ws.Signaled():
			code = 128 + int(ws.Signal())
		}
	}
}

// lookPath finds argv0 on the PATH of the command's environment.
func lookPath(argv0 string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + argv0
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", argv0)
}

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}
