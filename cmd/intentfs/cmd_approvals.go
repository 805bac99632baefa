package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/internal/textsafe"
)

func approvalsCmd() *command {
	return &command{
		name: "approvals", summary: "list what waits for a human", usage: "[--json]",
		help: `Lists the changes an approval rule holds and the scope requests agents
filed, oldest first: id, what and where, intent, session, process and how
long it has waited. A held change waits in the agent's system call until
you run "intentfs approve ID" or "intentfs deny ID", or its rule's timeout
denies it. Recent decisions follow.

Examples:
  intentfs approvals
  intentfs approvals --mount /workspace --json`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint (default: the mount containing the current directory, or the only one)")
			fs.Bool("json", false, "print {pending, decisions} as JSON")
		},
		run: func(a *app, args []string) error {
			if len(args) != 0 {
				return usagef("approvals takes no arguments")
			}
			mnt, _ := a.fs.GetString("mount")
			e, err := findMount(mnt)
			if err != nil {
				return err
			}
			resp, err := call(e, control.Request{Op: "approvals"})
			if err != nil {
				return err
			}
			if jsonOut(a) {
				return printJSON(a, struct {
					Pending   []control.Pending  `json:"pending"`
					Decisions []control.Decision `json:"decisions"`
				}{orEmpty(resp.Pending), orEmpty(resp.Decisions)})
			}
			printPending(a, resp.Pending, time.Now())
			if len(resp.Decisions) > 0 {
				fmt.Fprintln(a.stdout, "\nrecent decisions:")
				for _, d := range resp.Decisions {
					fmt.Fprintf(a.stdout, "  %s\n", describeDecision(d))
				}
			}
			return nil
		},
	}
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// printPending prints what waits as a table.
func printPending(a *app, pending []control.Pending, now time.Time) {
	if len(pending) == 0 {
		fmt.Fprintln(a.stdout, "nothing waits for a human")
		return
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWHAT\tPATH\tINTENT\tSESSION\tPROCESS\tWAITING\tDENIED IN\tWHY")
	for _, p := range pending {
		what, path, deniedIn := p.Op, p.Path, max(p.Deadline.Sub(now), 0).Round(time.Second).String()
		if p.Path2 != "" {
			path += " -> " + p.Path2
		}
		why := "rule " + p.Rule + ": " + p.Why
		if p.Kind == control.PendingScopeRequest {
			what, path, deniedIn, why = "scope request", strings.Join(p.Paths, " "), "-", p.Why
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, textsafe.Escape(what), textsafe.Escape(path), dash(p.Intent), dash(p.Session),
			processText(p), now.Sub(p.Since).Round(time.Second), deniedIn, textsafe.Escape(why))
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return textsafe.Escape(s)
}

func processText(p control.Pending) string {
	if p.Process == nil {
		return "-"
	}
	return fmt.Sprintf("%d %s (uid %d)", p.Process.Pid, textsafe.Escape(p.Process.Comm), p.Process.Uid)
}

// describeDecision says in one line what was decided.
func describeDecision(d control.Decision) string {
	p := d.Pending
	what := fmt.Sprintf("%s %s", p.Op, p.Path)
	if p.Kind == control.PendingScopeRequest {
		what = fmt.Sprintf("scope request for %s under %s", strings.Join(p.Paths, ", "), p.Intent)
	} else if p.Process != nil {
		what += fmt.Sprintf(" (pid %d %s)", p.Process.Pid, p.Process.Comm)
	}
	s := fmt.Sprintf("%d %s by %s: %s", p.ID, strings.ReplaceAll(d.Verdict, "_", " "), d.By, what)
	switch {
	case d.ForProcess:
		s += fmt.Sprintf("; covers rule %s's changes by that process while it runs", p.Rule)
	case d.For > 0:
		s += fmt.Sprintf("; covers rule %s's changes by that process for %s", p.Rule, d.For)
	}
	if d.Reason != "" {
		s += " (" + d.Reason + ")"
	}
	return textsafe.Escape(s)
}

func approveCmd() *command {
	return decideCmd(control.VerdictApproved, "approve", "let a held change proceed, or grant a scope request",
		`Approves the pending entry ID (see intentfs approvals). A held change
proceeds at once. With --for, the same rule's further changes by the same
process proceed without asking for that long (the rest of an rm -rf, say);
with --process, for as long as that process runs. Approving a scope request
adds its paths to the intent's owned_scope in the policy file, keeping the
file's comments and layout, and records the scope change.

Examples:
  intentfs approve 17
  intentfs approve 17 --for 60s
  intentfs approve 17 --process --mount /workspace`, 0)
}

func denyCmd() *command {
	return decideCmd(control.VerdictDenied, "deny", "refuse a held change or a scope request",
		`Denies the pending entry ID (see intentfs approvals). A held change fails
with "Permission denied" (EACCES) and the reason the agent reads in
.intentfs/denials. The same rule's further changes by the same process are
refused without asking for --for (default 1m, the rest of the burst);
--for 0 refuses only this one. A denied scope request changes nothing.

Examples:
  intentfs deny 17
  intentfs deny 17 --reason "keep the fixtures" --for 0
  intentfs deny 18 --mount /workspace`, approvals.DefaultDenyCover)
}

func decideCmd(verdict, name, summary, help string, defaultFor time.Duration) *command {
	return &command{
		name: name, summary: summary, usage: "ID [--for D] [--process] [--reason R]", help: help,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint (default: the mount containing the current directory, or the only one)")
			fs.Duration("for", defaultFor, "also decide the rule's further changes by the same process for this long")
			fs.Bool("process", false, "also decide the rule's further changes by the same process for as long as it runs")
			fs.String("reason", "", "why, for the agent and the ledger")
			fs.Bool("json", false, "print the decisions made as JSON")
		},
		run: func(a *app, args []string) error {
			if len(args) != 1 {
				return usagef("give exactly one pending ID (see intentfs approvals)")
			}
			id, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil || id == 0 {
				return usagef("%q is not a pending ID: IDs are the numbers intentfs approvals shows", args[0])
			}
			cover, _ := a.fs.GetDuration("for")
			if cover < 0 {
				return usagef("--for must not be negative")
			}
			proc, _ := a.fs.GetBool("process")
			reason, _ := a.fs.GetString("reason")
			mnt, _ := a.fs.GetString("mount")
			e, err := findMount(mnt)
			if err != nil {
				return err
			}
			resp, err := call(e, control.Request{Op: "decide", Decide: &control.DecideRequest{ID: id, Verdict: verdict,
				For: cover, ForProcess: proc, Reason: reason}})
			if err != nil {
				return err
			}
			if jsonOut(a) {
				return printJSON(a, orEmpty(resp.Decisions))
			}
			for _, d := range resp.Decisions {
				fmt.Fprintln(a.stdout, describeDecision(d))
			}
			return nil
		},
	}
}
