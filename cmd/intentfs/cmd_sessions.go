package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/textsafe"
)

func sessionsCmd() *command {
	return &command{
		name: "sessions", summary: "list the agent sessions of a mount", usage: "[--json]",
		help: `Lists the agent sessions (intentfs run) of a mount: the live ones, then the
recently ended. For each: id, name, user, root pid, intent (pinned or selected
by the agent), when it started, and its counts of changes and denials.

Examples:
  intentfs sessions
  intentfs sessions --mount /workspace --json
  intentfs log --session 3f2a9c1e          # what one session did`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint (default: the mount containing the current directory, or the only one)")
			fs.Bool("json", false, "print the sessions as JSON")
		},
		run: func(a *app, args []string) error {
			if len(args) > 0 {
				return usagef("sessions takes no arguments")
			}
			e, err := findMount(flagString(a, "mount"))
			if err != nil {
				return err
			}
			resp, err := call(e, control.Request{Op: "sessions"})
			if err != nil {
				return err
			}
			list := resp.Sessions
			if list == nil {
				list = []control.SessionInfo{}
			}
			if jsonOut(a) {
				return printJSON(a, list)
			}
			if len(list) == 0 {
				fmt.Fprintf(a.stdout, "no agent sessions on %s (start one with: sudo intentfs run --mount %s -- CMD)\n", e.Mountpoint, e.Mountpoint)
				return nil
			}
			printSessions(a.stdout, list)
			return nil
		},
	}
}

// printSessions prints sessions as a table.
func printSessions(w io.Writer, list []control.SessionInfo) {
	fmt.Fprintf(w, "%-8s  %-5s  %-14s  %-10s  %-7s  %-16s  %-8s  %7s  %7s\n", "SESSION", "STATE", "NAME", "USER", "PID", "INTENT", "STARTED", "CHANGES", "DENIALS")
	for _, s := range list {
		state := "live"
		if !s.Live {
			state = "ended"
		}
		intent := s.Intent
		switch {
		case intent == "":
			intent = "none"
		case s.Check:
			intent += " (check)"
		case s.Pinned:
			intent += " (pinned)"
		}
		name := s.Name
		if name == "" {
			name = "-"
		}
		fmt.Fprintf(w, "%-8s  %-5s  %-14s  %-10s  %-7d  %-16s  %-8s  %7d  %7d\n", s.ID, state, textsafe.Escape(name),
			textsafe.Escape(s.User), s.RootPid, intent, s.Started.Local().Format(time.TimeOnly), s.Changes, s.Denials)
	}
}
