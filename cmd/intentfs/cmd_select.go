package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/textsafe"
)

func selectCmd() *command {
	return &command{
		name: "select", summary: "choose the active intent", usage: "ID | --none",
		help: `Makes ID the active intent of a mount: from now on, changes in the mount are
allowed inside its owned_scope only. --none deselects, after which every
governed change is denied. The selection is recorded in the ledger.

An agent can do the same from inside the mount:
  echo INT-001 > .intentfs/active

Examples:
  intentfs select INT-001 --mount /workspace
  intentfs select --none`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint (default: the mount containing the current directory, or the only one)")
			fs.Bool("none", false, "deselect: no intent is active")
			fs.Bool("json", false, "print the resulting status as JSON")
		},
		run: func(a *app, args []string) error {
			none, _ := a.fs.GetBool("none")
			if none == (len(args) == 1) || len(args) > 1 {
				return usagef("give exactly one intent ID, or --none")
			}
			id := ""
			if !none {
				id = args[0]
			}
			mnt, _ := a.fs.GetString("mount")
			e, err := findMount(mnt)
			if err != nil {
				return err
			}
			resp, err := call(e, control.Request{Op: "select", Intent: id})
			if err != nil {
				return err
			}
			if jsonOut(a) {
				return printJSON(a, resp.Status)
			}
			st := resp.Status
			if id == "" {
				fmt.Fprintf(a.stdout, "no intent is active on %s: governed changes are denied\n", e.Mountpoint)
				return nil
			}
			fmt.Fprintf(a.stdout, "active intent on %s: %s %q (%s)\n", e.Mountpoint, st.ActiveIntent, st.IntentName, st.IntentStatus)
			if st.IntentStatus != "IN_PROGRESS" {
				fmt.Fprintf(a.stdout, "note: %s is %s; changes are allowed only while an intent is IN_PROGRESS\n", id, st.IntentStatus)
			}
			printHeldWriters(a, st.HeldBy(id))
			return nil
		},
	}
}

// printHeldWriters tells the human which files stay open for writing
// under the intent they were opened under.
func printHeldWriters(a *app, held []control.OpenWriter) {
	if len(held) == 0 {
		return
	}
	fmt.Fprintf(a.stdout, "note: %d file(s) are open for writing under other intents; their changes stay recorded under those until closed:\n", len(held))
	for _, w := range held {
		fmt.Fprintf(a.stdout, "  %s  %s  pid %d\n", textsafe.Escape(w.Path), w.Intent, w.Pid)
	}
}
