// Command intentfs governs what AI coding agents change: it mounts a
// workspace through FUSE, allows changes only inside the active intent's
// scope, and records every change in an append-only ledger.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/runner"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit codes scripts can rely on.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // bad flags or arguments
	exitNoMount = 3 // no mount matched
)

// usageError marks an error as the caller's mistake (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// silentFailure exits 1 after a command has already reported why.
type silentFailure struct{}

func (silentFailure) Error() string { return "failed" }

// command is one subcommand.
type command struct {
	name    string
	summary string
	usage   string // argument synopsis
	help    string // longer description with examples
	run     func(app *app, args []string) error
	flags   func(fs *pflag.FlagSet)
	// subcommands, if set, are dispatched on the first argument.
	subcommands []*command
	// stopAtArgs ends flag parsing at the first argument, so a command
	// line given to run is not taken for intentfs's flags.
	stopAtArgs bool
}

type app struct {
	stdout, stderr io.Writer
	fs             *pflag.FlagSet
	// rawArgs are the command's arguments as given, for re-execution.
	rawArgs []string
}

func commands() []*command {
	return []*command{
		initCmd(), mountCmd(), selectCmd(), statusCmd(), logCmd(), checkCmd(), approvalsCmd(), approveCmd(), denyCmd(), watchCmd(), notesCmd(), unmountCmd(), runCmd(), sessionsCmd(), intentCmd(), policyCmd(), contextCmd(), agentGuideCmd(), doctorCmd(), hookCmd(), mcpCmd(), verifyCmd(), acceptCmd(), diffCmd(), revertCmd(), blameCmd(), gcCmd(), demoCmd(), containerCmd(), uiCmd(), versionCmd(),
	}
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == runner.InitArg {
		// The first process of a session started by intentfs run.
		os.Exit(runner.Init())
	}
	stop := startProfiles()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// startProfiles profiles any command, the daemon included, when asked to
// by the environment (the benchmark harness uses it to show where the
// time goes): INTENTFS_CPUPROFILE=FILE writes a CPU profile,
// INTENTFS_BLOCKPROFILE=FILE a profile of where goroutines waited (on
// locks, channels and the ledger's fsync) for 10 µs or more,
// INTENTFS_MUTEXPROFILE=FILE where goroutines held a lock others waited
// for. The returned function writes them. A daemon started in the
// background writes its own, at FILE.daemon: the command that started it
// writes FILE, and sharing one file made both profiles unreadable.
func startProfiles() (stop func()) {
	var stops []func()
	if p := os.Getenv("INTENTFS_CPUPROFILE"); p != "" {
		if f, err := createProfile(p); err == nil && pprof.StartCPUProfile(f) == nil {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if p := os.Getenv("INTENTFS_BLOCKPROFILE"); p != "" {
		runtime.SetBlockProfileRate(int((10 * time.Microsecond).Nanoseconds()))
		stops = append(stops, func() {
			if f, err := createProfile(p); err == nil {
				pprof.Lookup("block").WriteTo(f, 0)
				f.Close()
			}
		})
	}
	if p := os.Getenv("INTENTFS_MUTEXPROFILE"); p != "" {
		// One contention event in five: enough to rank the locks, cheap
		// enough not to change what is measured.
		runtime.SetMutexProfileFraction(5)
		stops = append(stops, func() {
			if f, err := createProfile(p); err == nil {
				pprof.Lookup("mutex").WriteTo(f, 0)
				f.Close()
			}
		})
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// createProfile creates a profile file readable by its owner only: the
// daemon runs with umask 0, and a profile shows paths and timings.
func createProfile(path string) (*os.File, error) {
	return os.OpenFile(profilePath(path, os.Getenv(readyFdEnv) != ""), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
}

// profilePath is where a process writes the profile asked for at path:
// path itself, or path.daemon in a daemon started in the background.
func profilePath(path string, backgroundDaemon bool) string {
	if backgroundDaemon {
		return path + ".daemon"
	}
	return path
}

func run(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		// No command is a usage mistake; say what the commands are.
		printTopUsage(stderr, cmds)
		return exitUsage
	}
	if args[0] == "--version" || args[0] == "-V" {
		args = []string{"version"}
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			args = []string{args[1], "--help"}
		} else {
			printTopUsage(stdout, cmds)
			return exitOK
		}
	}
	var cmd *command
	for _, c := range cmds {
		if c.name == args[0] {
			cmd = c
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "intentfs: unknown command %q\n\n", args[0])
		printTopUsage(stderr, cmds)
		return exitUsage
	}
	if cmd.subcommands != nil {
		return runSub(cmd, args[1:], stdout, stderr)
	}
	return runCommand(cmd, cmd.name, args[1:], stdout, stderr)
}

// runSub dispatches "intentfs intent start ..." to its subcommand.
func runSub(parent *command, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := stdout
		if len(args) == 0 {
			w = stderr
		}
		fmt.Fprintf(w, "Usage: intentfs %s %s\n\n%s\n\nSubcommands:\n", parent.name, parent.usage, strings.TrimSpace(parent.help))
		for _, c := range parent.subcommands {
			fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
		}
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range parent.subcommands {
		if c.name == args[0] {
			return runCommand(c, parent.name+" "+c.name, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "intentfs %s: unknown subcommand %q (run intentfs %s --help)\n", parent.name, args[0], parent.name)
	return exitUsage
}

func runCommand(cmd *command, fullName string, args []string, stdout, stderr io.Writer) int {
	cmd = &command{name: fullName, summary: cmd.summary, usage: cmd.usage, help: cmd.help, run: cmd.run, flags: cmd.flags, stopAtArgs: cmd.stopAtArgs}
	fs := pflag.NewFlagSet(cmd.name, pflag.ContinueOnError)
	fs.SetInterspersed(!cmd.stopAtArgs)
	fs.SetOutput(io.Discard)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	fs.Usage = func() {}
	a := &app{stdout: stdout, stderr: stderr, fs: fs, rawArgs: args}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printCmdUsage(stdout, cmd, fs)
			return exitOK
		}
		fmt.Fprintf(stderr, "intentfs %s: %v\n\n", cmd.name, err)
		printCmdUsage(stderr, cmd, fs)
		return exitUsage
	}
	err := cmd.run(a, fs.Args())
	var code exitCode
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "intentfs %s: %v\n\n", cmd.name, err)
		printCmdUsage(stderr, cmd, fs)
		return exitUsage
	case errors.As(err, new(silentFailure)):
		return exitFailure
	case errors.As(err, new(noMountError)):
		fmt.Fprintf(stderr, "intentfs %s: %v\n", cmd.name, err)
		return exitNoMount
	default:
		fmt.Fprintf(stderr, "intentfs %s: %v\n", cmd.name, err)
		return exitFailure
	}
}

func printTopUsage(w io.Writer, cmds []*command) {
	fmt.Fprint(w, `intentfs governs what AI coding agents change in a workspace.

The workspace is mounted through FUSE; every change made in the mount is
checked against the active intent's owned_scope and recorded in
.orchestration/agent_trace.jsonl.

Usage:
  intentfs COMMAND [flags] [args]

Commands:
`)
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.name))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprint(w, `
Examples:
  intentfs demo                          # a guided tour in a temporary directory
  intentfs init ./repo                   # scaffold repo/.orchestration/
  intentfs mount ./repo /workspace       # start governing
  intentfs select INT-001                # choose the active intent

Run "intentfs COMMAND --help" for a command's flags and examples,
"intentfs --version" for the version.
Exit codes: 0 success, 1 failure, 2 bad usage, 3 no mount found.
`)
}

func printCmdUsage(w io.Writer, c *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: intentfs %s %s\n\n%s\n", c.name, c.usage, strings.TrimSpace(c.help))
	if u := fs.FlagUsages(); u != "" {
		fmt.Fprintf(w, "\nFlags:\n%s", u)
	}
}

func versionCmd() *command {
	return &command{
		name: "version", summary: "print the version", usage: "",
		help: "Prints the intentfs version.\n\nExample:\n  intentfs version",
		run: func(a *app, args []string) error {
			fmt.Fprintf(a.stdout, "intentfs %s\n", version)
			return nil
		},
	}
}
