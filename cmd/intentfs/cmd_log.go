package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
)

func logCmd() *command {
	return &command{
		name: "log", summary: "query the ledger", usage: "[flags]",
		help: `Prints ledger records as a table (time, event, intent, path, process, hashes),
newest last; --json prints them as JSON lines. Filters combine. The ledger is
read as a stream, across rotated files, so queries stay fast and flat in
memory on millions of records. Reads the ledger of a mount (--mount, or the
mount or workspace containing the current directory) or of a source
directory (--source), mounted or not.

Examples:
  intentfs log --intent INT-001
  intentfs log --path "src/api/**" --since 2h
  intentfs log --event denied --comm npm --json | jq .metadata
  intentfs log --session 3f2a9c1e       # one agent session's records
  intentfs log --would-deny --since 7d  # observe mode: what the policy would refuse`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint")
			sourceFlag(fs)
			fs.String("intent", "", "only records of this intent")
			fs.String("path", "", "only records whose path (or from_path) matches this glob")
			fs.String("since", "", "only records since a duration ago (30m, 2h, 7d) or a time (2026-01-31, RFC 3339)")
			fs.StringSlice("event", nil, "only these events (create, write, delete, rename, denied, select, transition, …)")
			fs.String("comm", "", "only records made by processes with this name")
			fs.String("session", "", "only records of this agent session (see intentfs sessions)")
			fs.Bool("would-deny", false, "only changes made that the policy refuses (observe mode: scope_validation FAIL)")
			fs.Int("limit", 20, "show the newest N matching records (0: all)")
			fs.Bool("json", false, "print records as JSON lines")
		},
		run: func(a *app, args []string) error {
			if len(args) != 0 {
				return usagef("unexpected arguments %v", args)
			}
			limit, _ := a.fs.GetInt("limit")
			if limit < 0 {
				return usagef("--limit must not be negative")
			}
			f := ledger.Filter{Intent: flagString(a, "intent"), PathGlob: flagString(a, "path"), Comm: flagString(a, "comm"),
				Session: flagString(a, "session")}
			f.WouldDeny, _ = a.fs.GetBool("would-deny")
			if s := flagString(a, "since"); s != "" {
				t, err := ledger.ParseSince(s, time.Now())
				if err != nil {
					return usagef("--since: %v", err)
				}
				f.Since = t
			}
			events, _ := a.fs.GetStringSlice("event")
			for _, e := range events {
				f.Events = append(f.Events, ledger.Event(e))
			}
			if err := f.Validate(); err != nil {
				return usagef("%v", err)
			}
			ws, err := workspaceFromFlags(a)
			if err != nil {
				return err
			}
			ws.settle(a)
			path := ws.layout().LedgerPath()
			if !hasLocalLedger(ws) {
				return logFromNotes(a, ws, f, limit) // a clone: the records are in git notes
			}
			if jsonOut(a) && limit == 0 {
				// Everything: the lines are JSON already; copy them through.
				out := bufio.NewWriterSize(a.stdout, 1<<20)
				err := ledger.QueryRaw(path, f, func(raw []byte) error {
					out.Write(raw)
					return out.WriteByte('\n')
				})
				if ferr := out.Flush(); err == nil {
					err = ferr
				}
				return err
			}
			recs, err := newestMatching(path, f, limit)
			if err != nil {
				return err
			}
			if jsonOut(a) {
				return printJSONLines(a, recs)
			}
			if len(recs) == 0 {
				fmt.Fprintln(a.stdout, noRecordsMessage(path))
				return nil
			}
			printRecords(a, recs)
			return nil
		},
	}
}

// newestMatching keeps the raw lines of the last limit matching records
// (all if 0) in a ring, so memory stays bounded by the limit, not the
// ledger, and decodes only those.
func newestMatching(path string, f ledger.Filter, limit int) ([]*ledger.Record, error) {
	var ring [][]byte
	start := 0
	err := ledger.QueryRaw(path, f, func(raw []byte) error {
		if limit == 0 || len(ring) < limit {
			ring = append(ring, append([]byte(nil), raw...))
			return nil
		}
		ring[start] = append(ring[start][:0], raw...)
		start = (start + 1) % limit
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]*ledger.Record, 0, len(ring))
	for _, raw := range append(ring[start:], ring[:start]...) {
		var r ledger.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, err
		}
		out = append(out, &r)
	}
	return out, nil
}

// errFound stops a scan at its first record.
var errFound = errors.New("found")

// noRecordsMessage says why a query printed nothing: an empty ledger, or
// filters no record matches.
func noRecordsMessage(path string) string {
	err := ledger.QueryRaw(path, ledger.Filter{}, func([]byte) error { return errFound })
	if errors.Is(err, errFound) {
		return "no records match (the ledger has records; widen the filters)"
	}
	return "the ledger has no records yet"
}

func printRecords(a *app, recs []*ledger.Record) {
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
		if g.Session != nil {
			// The agent session the process ran in.
			proc += "@" + g.Session.ID
		}
		note := g.Reason
		if note == "" && g.RestoredFrom != "" {
			// git wrote content that is not new: say where it is from.
			note = "restored from " + restoredFromShort(g.RestoredFrom)
		}
		if g.Event == ledger.EventSelect {
			note = "from " + orDash(ledger.Str(g.FromIntent))
		}
		if g.Mode != "" {
			note = "mode " + g.Mode
		}
		if g.Event == ledger.EventTransition {
			note = fmt.Sprintf("%s → %s %s", orDash(g.From), g.To, g.Reason)
		}
		if g.ScopeValidation == "FAIL" && ledger.ClassOf(g.Event) != "" {
			// Made in observe mode, though the policy refuses it.
			note = "WOULD DENY " + g.Code + ": " + note
		}
		// Every field an agent can shape (names, comm, reasons quoting
		// them) is escaped: a name must not move the cursor or end a line.
		esc := textsafe.Escape
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s → %s\t%s\n", ts.Local().Format("15:04:05.000"), esc(string(g.Event)), esc(orDash(ledger.Str(g.IntentID))),
			esc(orDash(path)), esc(proc), ledger.ShortHash(ledger.Str(g.PreHash)), ledger.ShortHash(ledger.Str(g.PostHash)), esc(note))
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// restoredFromShort shortens a restored_from value ("commit <id>",
// "record <id>", "before intentfs") for the table.
func restoredFromShort(s string) string {
	if kind, id, ok := strings.Cut(s, " "); ok && (kind == "commit" || kind == "record") && len(id) > 12 {
		return kind + " " + id[:12]
	}
	return s
}
