package main

import (
	"github.com/intentfs/intentfs/internal/registry"

	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/sidecar"
	"github.com/intentfs/intentfs/internal/workflow"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// workspace is the source a command acts on, and its mount if it has one.
type workspace struct {
	source string
	mount  *registry.Entry
}

// resolveWorkspace finds the source: --source, else the mount containing
// the current directory, else the nearest directory above the current one
// that holds a policy.
func resolveWorkspace(sourceFlag string) (workspace, error) {
	entries, _ := registry.DefaultRegistry().List()
	bySource := func(src string) *registry.Entry {
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
			return workspace{}, err
		}
		if !policy.HasPolicy(abs) {
			return workspace{}, fmt.Errorf("%s has no %s (create one with `intentfs init`)", abs, policy.IntentsFile)
		}
		return workspace{source: abs, mount: bySource(abs)}, nil
	}
	cwd, _ := os.Getwd()
	for _, e := range entries {
		if cwd == e.Mountpoint || len(cwd) > len(e.Mountpoint) && cwd[:len(e.Mountpoint)+1] == e.Mountpoint+"/" {
			return workspace{source: e.Source, mount: &e}, nil
		}
	}
	for dir := cwd; ; dir = filepath.Dir(dir) {
		if policy.HasPolicy(dir) {
			abs, err := canonical(dir)
			if err != nil {
				return workspace{}, err
			}
			return workspace{source: abs, mount: bySource(abs)}, nil
		}
		if dir == "/" {
			return workspace{}, noMountError{errors.New("no workspace here: run inside a mount or a directory with .orchestration/active_intents.yaml, or pass --source DIR")}
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

// offline runs fn with a workflow on an unmounted source, holding the
// source's lock so this command is the ledger's only writer meanwhile.
func offline(ws workspace, what string, fn func(w *workflow.Workflow) error) error {
	lock, err := ledger.AcquireLock(ws.source, fmt.Sprintf("`intentfs %s`", what))
	if err != nil {
		return err
	}
	defer lock.Close()
	git := ledger.NewGitHead(ws.source)
	writer, err := ledger.OpenWriter(filepath.Join(ws.source, ledger.FileName), ledger.WriterOptions{
		Rev: git.Revision, Source: ws.source, Version: version})
	if err != nil {
		return err
	}
	w := &workflow.Workflow{Source: ws.source, Lessons: &sidecar.Lessons{Path: filepath.Join(ws.source, policy.OrchestrationDir, "CLAUDE.md")},
		Record: func(c ledger.Change) { writer.Append(ledger.NewRecord(c, version)) }}
	err = fn(w)
	if cerr := writer.Close(); err == nil {
		err = cerr
	}
	return err
}

// runIntentOp sends a lifecycle command to the daemon, or runs it here.
func runIntentOp(ws workspace, r workflow.Request) error {
	if ws.mount != nil {
		_, err := call(*ws.mount, control.Request{Op: "intent", IntentOp: &r})
		return err
	}
	return offline(ws, "intent "+r.Action, func(w *workflow.Workflow) error { return w.Do(r, cliProcess()) })
}
