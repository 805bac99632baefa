package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/internal/workflow"
	"github.com/intentfs/intentfs/internal/workspace"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// workspace is the source a command acts on, and its mount if it has one.
type cliWorkspace struct {
	source string
	mount  *mounts.Entry
}

// resolveWorkspace finds the source: --source, else the mount containing
// the current directory, else the nearest directory above the current one
// that holds a policy.
func resolveWorkspace(sourceFlag string) (cliWorkspace, error) {
	ws, err := findWorkspace(sourceFlag)
	if err != nil {
		return ws, err
	}
	return ws, checkOrchestrationDir(ws.source)
}

// checkOrchestrationDir refuses a workspace whose .orchestration is a
// symlink: every command would read (and some write) its policy and
// ledger wherever the link points — a clone can commit it pointing at
// /dev, at another repository, anywhere.
func checkOrchestrationDir(source string) error {
	fd, err := safeio.OpenDir(filepath.Join(source, policy.OrchestrationDir))
	if err != nil {
		if errors.Is(err, safeio.ErrSymlink) {
			return fmt.Errorf("%w; replace it with a real directory (remove the link and restore %s/ from a copy you trust)", err, policy.OrchestrationDir)
		}
		return nil // missing or unreadable: what the command reads there says so
	}
	return syscall.Close(fd)
}

func findWorkspace(sourceFlag string) (cliWorkspace, error) {
	entries, _ := mounts.DefaultRegistry().List()
	bySource := func(src string) *mounts.Entry {
		for _, e := range entries {
			if e.Source == src {
				return &e
			}
		}
		return nil
	}
	if sourceFlag != "" {
		abs, err := canonical(sourceFlag)
		if err != nil {
			return cliWorkspace{}, err
		}
		if !policy.HasPolicy(abs) {
			return cliWorkspace{}, fmt.Errorf("%s has no %s (create one with `intentfs init`)", abs, policy.IntentsFile)
		}
		return cliWorkspace{source: abs, mount: bySource(abs)}, nil
	}
	cwd, _ := os.Getwd()
	for _, e := range entries {
		if cwd == e.Mountpoint || len(cwd) > len(e.Mountpoint) && cwd[:len(e.Mountpoint)+1] == e.Mountpoint+"/" {
			return cliWorkspace{source: e.Source, mount: &e}, nil
		}
	}
	for dir := cwd; ; dir = filepath.Dir(dir) {
		if policy.HasPolicy(dir) {
			abs, err := canonical(dir)
			if err != nil {
				return cliWorkspace{}, err
			}
			return cliWorkspace{source: abs, mount: bySource(abs)}, nil
		}
		if dir == "/" {
			return cliWorkspace{}, noMountError{errors.New("no workspace here: run inside a mount or a directory with .orchestration/active_intents.yaml, or pass --source DIR")}
		}
	}
}

func canonical(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// cliProcess names the person running the CLI, for the ledger.
func cliProcess() *ledger.Process {
	name := "intentfs"
	if u, err := user.Current(); err == nil {
		name = "intentfs (" + u.Username + ")"
	}
	return &ledger.Process{Pid: uint32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), Comm: name,
		Cmdline: os.Args}
}

// settle asks the source's mount, if it has a live one, to record what
// its writers have written so far and flush the ledger before the command
// reads the ledger file: on the cached data path a write is recorded once
// its file's writes pause, and a log or verify run right after an edit
// would otherwise not see it (verify would call the file untraced). Best
// effort: a daemon this user may not control, or one gone, leaves the
// ledger on disk as it is; one that fails or does not answer within
// control.SettleWait is named, and the command goes on without it.
func (ws cliWorkspace) settle(a *app) { ws.settleWithin(a, control.SettleWait) }

func (ws cliWorkspace) settleWithin(a *app, wait time.Duration) {
	if ws.mount == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := control.Call(ctx, ws.mount.Socket, control.Request{Op: "settle"})
	switch {
	case err == nil:
	case timedOut(err):
		fmt.Fprintf(a.stderr, "intentfs: the daemon of %s did not record its pending writes within %s; reading the ledger as it is (a change of the last moments may be missing)\n",
			escapeTerminal(ws.mount.Mountpoint), wait)
	case resp != nil && !strings.HasPrefix(resp.Error, "unknown request"):
		// The daemon answered, and could not record or flush (a daemon
		// of an older version does not know the request: nothing to say).
		fmt.Fprintf(a.stderr, "intentfs: the daemon of %s could not record its pending writes (%s); reading the ledger as it is\n",
			escapeTerminal(ws.mount.Mountpoint), escapeTerminal(resp.Error))
	}
}

// layout is where the source keeps its orchestration files.
func (ws cliWorkspace) layout() workspace.Layout { return workspace.At(ws.source) }

// offline runs fn in a session on an unmounted source, wired as a mount
// wires it, holding the source's lock so this command is the ledger's only
// writer meanwhile. Lessons go to lessonsFile in .orchestration/ ("" for
// the default).
func offline(ws cliWorkspace, what, lessonsFile string, fn func(s *workspace.Opened) error) error {
	layout, err := ws.layout().WithLessonsFile(lessonsFile)
	if err != nil {
		return usagef("--lessons-file: %v", err)
	}
	s, err := layout.Open(workspace.OpenOptions{Holder: fmt.Sprintf("`intentfs %s`", what), Version: version})
	if err != nil {
		return err
	}
	err = fn(s)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// runIntentOp sends a lifecycle command to the daemon, or runs it here.
// Run here, it writes no lessons: only failed acceptance checks do, and
// they run in a mount (see mountForChecks), which honours --lessons-file.
func runIntentOp(ws cliWorkspace, r workflow.Request) error {
	if ws.mount != nil {
		wr := intentRequestToWire(r)
		_, err := call(*ws.mount, control.Request{Op: "intent", IntentOp: &wr})
		return err
	}
	return offline(ws, "intent "+r.Action, "", func(s *workspace.Opened) error { return s.Workflow.Do(r, cliProcess()) })
}
