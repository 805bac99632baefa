package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/intentcontext"
	"github.com/intentfs/intentfs/policy"
)

func contextCmd() *command {
	return &command{
		name: "context", summary: "print an intent's context block for an agent", usage: "[ID]",
		help: `Prints the <intent_context> XML block an agent loads when it selects an
intent: scope, constraints, acceptance criteria, parents, the files the
intent touched (most recent first), its recent changes and excerpts of its
related specs, within 16 KiB. Without ID: the active intent of the mount.
Inside the mount the agent reads the same block from .intentfs/context.

Examples:
  intentfs context INT-001 --source ./repo
  intentfs context --mount /workspace`,
		flags: func(fs *pflag.FlagSet) { sourceFlag(fs); fs.String("mount", "", "the mountpoint") },
		run: func(a *app, args []string) error {
			if len(args) > 1 {
				return usagef("give at most one intent ID")
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			var ws cliWorkspace
			var err error
			if mnt := flagString(a, "mount"); mnt != "" {
				e, ferr := findMount(mnt)
				if ferr != nil {
					return ferr
				}
				ws = cliWorkspace{source: e.Source, mount: &e}
			} else if ws, err = resolveWorkspace(flagString(a, "source")); err != nil {
				return err
			}
			if ws.mount != nil {
				resp, err := call(*ws.mount, control.Request{Op: "context", Intent: id})
				if err != nil {
					return err
				}
				fmt.Fprint(a.stdout, resp.Context)
				return nil
			}
			if id == "" {
				return usagef("the workspace is not mounted, so no intent is active: name one")
			}
			layout := ws.layout()
			in, _, err := policy.LoadIntents(layout.PolicyPath())
			if err != nil {
				return err
			}
			b, err := intentcontext.Build(intentcontext.Input{Intents: in, ID: id, LedgerPath: layout.LedgerPath(),
				Source: ws.source, MapFiles: layout.IntentMap().Files(id)})
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(b)
			return err
		},
	}
}

func agentGuideCmd() *command {
	return &command{
		name: "agent-guide", summary: "print the guide for agents (for CLAUDE.md or AGENTS.md)", usage: "",
		help: "Prints how an agent works in an intentfs workspace: listing and selecting\nintents, loading the context, what \"Permission denied\" means, recording\nlessons. Inside a mount it is also .intentfs/README.md.\n\nExample:\n  intentfs agent-guide >> AGENTS.md",
		run: func(a *app, args []string) error {
			_, err := fmt.Fprint(a.stdout, control.AgentGuide)
			return err
		},
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// isTerminal reports whether w is a terminal, for progress output.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
