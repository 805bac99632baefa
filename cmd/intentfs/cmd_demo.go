package main

import (
	"errors"
	"github.com/intentfs/intentfs/internal/policyedit"

	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/daemon"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

const demoPolicy = `active_intents:
  - id: INT-001
    name: "Add a greeting to the service"
    status: IN_PROGRESS
    owned_scope:
      - "src/**"
    constraints:
      - "Leave the README to the docs team"
    acceptance_criteria:
      - "src/greeting.txt says hello"
`

func demoCmd() *command {
	return &command{
		name: "demo", summary: "a self-contained tour in a temporary directory", usage: "",
		help: `Creates a workspace in a temporary directory, mounts it, selects an intent,
makes an allowed and a denied change with ordinary shell tools, prints the
ledger, and unmounts. Needs FUSE (/dev/fuse; root, or fusermount3).

With --agent claude the changes are made by a real Claude Code (on $PATH,
or the one the real-agent tests keep in their cache) with intentfs's hooks,
driven by a scripted model on a local port: no account, no network. It
shows what the model asked for and what Claude Code told it.

Examples:
  go run ./cmd/intentfs demo
  intentfs demo --keep           # keep the directory to look around afterwards
  intentfs demo --agent claude   # a real Claude Code session, refused and told why`,
		flags: func(fs *pflag.FlagSet) {
			fs.Bool("keep", false, "keep the temporary directory")
			fs.String("agent", "", "run a real agent instead of shell commands: claude")
		},
		run: runDemo,
	}
}

func runDemo(a *app, args []string) (err error) {
	if len(args) != 0 {
		return usagef("demo takes no arguments")
	}
	keep, _ := a.fs.GetBool("keep")
	agent, claude := flagString(a, "agent"), ""
	if agent != "" {
		if claude, err = findDemoAgent(agent); err != nil {
			return err
		}
	}
	if err := fuseUsable(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "intentfs-demo-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(tmp)
	}
	src, mnt := filepath.Join(tmp, "repo"), filepath.Join(tmp, "workspace")
	for _, d := range []string{src + "/src", mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if _, err := policyedit.Scaffold(src); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, policy.IntentsFile), []byte(demoPolicy), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("# demo service\n"), 0o644); err != nil {
		return err
	}
	if claude != "" {
		if err := installDemoHooks(src); err != nil {
			return err
		}
	}
	// A reader that goes away (intentfs demo | head) must end the demo,
	// not kill it with its workspace mounted: with SIGPIPE ignored a
	// write fails instead, and the first failed write ends the demo.
	signal.Ignore(syscall.SIGPIPE)
	out := &demoOutput{w: a.stdout}
	a.stdout = out
	w := out
	fmt.Fprintf(w, "intentfs demo in %s\n\n1. The policy (%s):\n\n%s\n\n", tmp, policy.IntentsFile, indent(demoPolicy))

	daemon.SetProcessUmask() // after the demo's own files are written
	d, err := daemon.Start(daemon.Config{Source: src, Mountpoint: mnt, Version: version,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: mounts.Registry{Dir: filepath.Join(tmp, "run")},
		OwnerUID: os.Getuid(), OwnerGID: os.Getgid()})
	if err != nil {
		return fmt.Errorf("mounting: %w", err)
	}
	done := make(chan struct{})
	go func() { d.Wait(); d.Close(); close(done) }()
	defer func() {
		if uerr := d.Unmount(); uerr != nil && err == nil {
			err = uerr
		}
		<-done
	}()
	// SIGINT or SIGTERM while mounted: the demo may be blocked in a
	// write, so the handler unmounts and exits itself.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case sig := <-sigs:
			os.Exit(demoInterrupted(a, d, done, sig, keep, tmp))
		case <-done:
		}
	}()

	fmt.Fprintf(w, "2. Mounted %s at %s (passthrough I/O: %v).\n\n", src, mnt, d.Status().Passthrough)
	if out.failed() {
		return nil
	}
	if claude != "" {
		fmt.Fprintf(w, "3. The agent's intent is INT-001 (scope src/**):\n")
		demoShell(w, mnt, "echo INT-001 > .intentfs/active && cat .intentfs/active")
		fmt.Fprintf(w, "\n4. Claude Code adds the greeting:\n")
		if err := runDemoAgent(w, claude, tmp, mnt); err != nil {
			return err
		}
		fmt.Fprintf(w, "\n5. The source: the README is unchanged, the greeting is there:\n")
		demoShell(w, mnt, "cat README.md src/greeting.txt")
		return demoLedger(a, d, keep, tmp, 6, "Claude Code's write: a new file renamed into place")
	}
	fmt.Fprintf(w, "3. Without an intent, nothing may change:\n")
	demoShell(w, mnt, "echo hello > src/greeting.txt")
	if out.failed() {
		return nil
	}
	fmt.Fprintf(w, "\n4. The agent selects INT-001 (scope src/**) by writing to the control file:\n")
	demoShell(w, mnt, "echo INT-001 > .intentfs/active && cat .intentfs/active")
	if out.failed() {
		return nil
	}
	fmt.Fprintf(w, "\n5. An allowed write, inside the scope:\n")
	demoShell(w, mnt, "echo hello > src/greeting.txt && sed -i 's/hello/hello, world/' src/greeting.txt && cat src/greeting.txt")
	if out.failed() {
		return nil
	}
	fmt.Fprintf(w, "\n6. A denied write, outside the scope; the source is unchanged:\n")
	demoShell(w, mnt, "echo 'agent was here' >> README.md")
	demoShell(w, mnt, "cat README.md")
	fmt.Fprintf(w, "\n   Why? The agent can read it in .intentfs/denials:\n")
	demoShell(w, mnt, "tail -n 1 .intentfs/denials")
	if out.failed() {
		return nil
	}
	fmt.Fprintf(w, "\n7. The policy and the ledger cannot be edited through the mount:\n")
	demoShell(w, mnt, "echo '' > .orchestration/agent_trace.jsonl")

	if out.failed() {
		return nil
	}
	return demoLedger(a, d, keep, tmp, 8, "the sed -i rename")
}

// demoOutput is the demo's stdout. After a write fails (the reader went
// away) it discards the rest, and the demo ends at its next step.
type demoOutput struct {
	w   io.Writer
	mu  sync.Mutex
	err error
}

func (o *demoOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.err = fmt.Errorf("the demo's output: %w", err)
	}
	return n, err
}

func (o *demoOutput) failed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err != nil
}

// demoInterrupted unmounts the demo's workspace when a signal stops it,
// waiting out a demo step's shell still in the mount, and returns the
// exit status for sig.
func demoInterrupted(a *app, d *daemon.Daemon, done <-chan struct{}, sig os.Signal, keep bool, tmp string) int {
	deadline := time.Now().Add(10 * time.Second)
	err := d.Unmount()
	for err != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		err = d.Unmount()
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "intentfs demo: stopped by %v, but %v: unmount it with intentfs unmount\n", sig, err)
		return 1
	}
	<-done
	if !keep {
		os.RemoveAll(tmp)
	}
	fmt.Fprintf(a.stderr, "intentfs demo: stopped by %v; unmounted\n", sig)
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// demoLedger prints the ledger as step n, the first rename in full (what
// it is: renamed), and the closing step.
func demoLedger(a *app, d *daemon.Daemon, keep bool, tmp string, n int, renamed string) error {
	w := a.stdout
	if err := d.FlushLedger(); err != nil {
		return err
	}
	recs, err := ledger.Tail(d.LedgerPath(), 50, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d. The ledger (%s), %d records:\n\n", n, d.LedgerPath(), len(recs))
	printRecords(a, recs)
	for _, r := range recs {
		if r.Gov().Event == ledger.EventRename {
			fmt.Fprintf(w, "\n   One record in full (%s, with pre and post hashes):\n", renamed)
			b, _ := jsonIndent(r)
			fmt.Fprintf(w, "%s\n", indent(string(b)))
			break
		}
	}
	fmt.Fprintf(w, "\n%d. Unmounting; the ledger is flushed.\n", n+1)
	if keep {
		fmt.Fprintf(w, "   The workspace stays in %s\n", tmp)
	}
	return nil
}

func demoShell(w io.Writer, dir, script string) {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	fmt.Fprintf(w, "   $ %s\n", script)
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l != "" {
			fmt.Fprintf(w, "   %s\n", l)
		}
	}
	if note := exitNote(err); note != "" {
		fmt.Fprintf(w, "   (%s)\n", note)
	}
}

// exitNote says how a demo command ended, "" for success.
func exitNote(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ee) && ee.Exited():
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	case errors.As(err, &ee):
		return "killed: " + ee.String()
	default:
		return "could not run: " + err.Error()
	}
}

func indent(s string) string {
	return "   " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n   ")
}

// fuseUsable explains up front why a mount cannot work here.
func fuseUsable() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("FUSE is not usable here (%v): run as root, or install fuse3 and make /dev/fuse accessible", err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			if _, err := exec.LookPath("fusermount"); err != nil {
				return fmt.Errorf("mounting as a normal user needs fusermount3 (Debian: apt-get install fuse3), or run as root")
			}
		}
	}
	return nil
}
