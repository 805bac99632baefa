package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/ledger"
)

func logCmd() *command {
	return &command{
		name: "log", summary: "show recent ledger records", usage: "",
		help: `Prints the most recent records of a ledger as a table: time, event, intent,
path, process and hashes. Reads the ledger of a running mount (--mount, or
the mount containing the current directory) or of a source directory
(--source), mounted or not.

Examples:
  intentfs log --mount /workspace
  intentfs log --source ./repo --limit 100
  intentfs log --json | jq .metadata`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint")
			fs.String("source", "", "a source directory, instead of a mount")
			fs.Int("limit", 20, "how many of the newest records to show")
			fs.Bool("json", false, "print records as JSON lines")
		},
		run: func(a *app, args []string) error {
			if len(args) != 0 {
				return usagef("unexpected arguments %v", args)
			}
			src, _ := a.fs.GetString("source")
			limit, _ := a.fs.GetInt("limit")
			if limit <= 0 {
				return usagef("--limit must be positive")
			}
			if src == "" {
				mnt, _ := a.fs.GetString("mount")
				e, err := findMount(mnt)
				if err != nil {
					return err
				}
				src = e.Source
			}
			recs, err := ledger.Tail(filepath.Join(src, ledger.FileName), limit, nil)
			if err != nil {
				return err
			}
			if jsonOut(a) {
				enc := json.NewEncoder(a.stdout)
				for _, r := range recs {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			}
			printRecords(a, recs)
			return nil
		},
	}
}

func printRecords(a *app, recs []*ledger.Record) {
	if len(recs) == 0 {
		fmt.Fprintln(a.stdout, "the ledger has no records yet")
		return
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tEVENT\tINTENT\tPATH\tPROCESS\tPRE → POST\tNOTE")
	for _, r := range recs {
		g := r.Gov()
		ts, _ := time.Parse(time.RFC3339Nano, r.Timestamp)
		path := r.Path()
		if g.FromPath != "" {
			path = g.FromPath + " → " + path
		}
		proc := "-"
		if g.Process != nil {
			proc = fmt.Sprintf("%s[%d]", g.Process.Comm, g.Process.Pid)
		}
		note := g.Reason
		if g.Event == ledger.EventSelect {
			note = "from " + orDash(ledger.Str(g.FromIntent))
		}
		if g.Mode != "" {
			note = "mode " + g.Mode
		}
		if g.Event == ledger.EventTransition {
			note = fmt.Sprintf("%s → %s %s", orDash(g.From), g.To, g.Reason)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s → %s\t%s\n", ts.Local().Format("15:04:05.000"), g.Event, orDash(ledger.Str(g.IntentID)),
			orDash(path), proc, short(g.PreHash), short(g.PostHash), note)
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// short abbreviates a "sha256:<hex>" hash for tables.
func short(h *string) string {
	if h == nil {
		return "-"
	}
	return strings.TrimPrefix(*h, "sha256:")[:12]
}
