package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/internal/workspace"
	"github.com/intentfs/intentfs/ledger"
)

func historySource(ws cliWorkspace) *history.Source {
	return withNotes(ws, ws.layout().History())
}

func diffCmd() *command {
	return &command{
		name: "diff", summary: "show what recorded changes did, as unified diffs", usage: "RECORD_ID | --intent ID | PATH",
		help: `Shows unified diffs built from the object store: of one record; of everything
an intent changed (each file from its first recorded version to its last);
or of everything recorded for a path.

Examples:
  intentfs diff 83e69104-61d8-46c5-a89e-5c873aedc895
  intentfs diff --intent INT-001
  intentfs diff src/api/handler.go
  intentfs diff --intent INT-001 --json | jq -r '.files[].path'`,
		flags: func(fs *pflag.FlagSet) {
			sourceFlag(fs)
			fs.String("mount", "", "the mountpoint")
			fs.String("intent", "", "diff everything this intent changed")
			fs.Bool("json", false, `print {"files": [{"path", "diff"}]} (one record: {"record", "path", "diff"})`)
		},
		run: func(a *app, args []string) error {
			intent := flagString(a, "intent")
			if (intent != "") == (len(args) == 1) || len(args) > 1 {
				return usagef("give a record id or a path, or --intent ID")
			}
			ws, err := workspaceFromFlags(a)
			if err != nil {
				return err
			}
			ws.settle(a)
			h := historySource(ws)
			var f ledger.Filter
			switch {
			case intent != "":
				f.Intent = intent
			case looksLikeID(args[0]):
				f.ID = args[0]
			default:
				f.PathGlob = strings.TrimPrefix(args[0], "./")
			}
			var recs []*ledger.Record
			if err := ledger.Query(h.Ledger, f, func(r *ledger.Record) error { recs = append(recs, r); return nil }); err != nil {
				return err
			}
			if len(recs) == 0 {
				return errors.New("no matching records")
			}
			if f.ID != "" {
				d, err := h.RecordDiff(recs[0])
				if err != nil {
					return err
				}
				if jsonOut(a) {
					return printJSON(a, map[string]string{"record": recs[0].ID, "path": recs[0].Path(), "diff": d})
				}
				fmt.Fprint(a.stdout, textsafe.EscapeContent(d))
				return nil
			}
			files, err := h.NetFileDiffs(recs)
			if err != nil {
				return err
			}
			if jsonOut(a) {
				if files == nil {
					files = []history.FileDiff{}
				}
				return printJSON(a, map[string]any{"files": files})
			}
			for _, f := range files {
				fmt.Fprint(a.stdout, textsafe.EscapeContent(f.Diff))
			}
			return nil
		},
	}
}

// blameText is a line of the file as blame shows it: escaped, and with no
// newline (a line has none; the tabwriter must see one row).
func blameText(s string) string {
	return strings.ReplaceAll(textsafe.EscapeContent(s), "\n", `\n`)
}

func looksLikeID(s string) bool { return len(s) == 36 && strings.Count(s, "-") == 4 }

func revertCmd() *command {
	return &command{
		name: "revert", summary: "undo recorded changes from their pre-images", usage: "RECORD_ID | --intent ID",
		help: `Restores what recorded changes destroyed, newest first: content changes get
their pre-image back, deleted files are recreated, renamed ones move back,
created ones are removed. A file written under a temporary name and renamed
into place (sed -i, editors) is one step: its net change. Files that changed
since their record are refused and listed, unless --force. The revert itself
is recorded in the ledger, and changes an earlier revert undid are left out:
reverting an intent twice does nothing the second time. Changes of mode,
owner, times and xattrs are not reverted.

Examples:
  intentfs revert --intent INT-001 --dry-run
  intentfs revert --intent INT-001
  intentfs log --path src/api.go --json | jq -r .id   # the ids of a file's records
  intentfs revert 83e69104-61d8-46c5-a89e-5c873aedc895 --force`,
		flags: func(fs *pflag.FlagSet) {
			sourceFlag(fs)
			fs.String("mount", "", "the mountpoint")
			fs.String("intent", "", "revert every change of this intent")
			fs.Bool("dry-run", false, "show the plan without changing anything")
			fs.Bool("force", false, "revert files that changed since their record too")
			fs.Bool("json", false, "print the plan as JSON")
		},
		run: func(a *app, args []string) error {
			intent := flagString(a, "intent")
			if (intent != "") == (len(args) == 1) || len(args) > 1 {
				return usagef("give a record id or --intent ID")
			}
			req := history.Request{Intent: intent}
			if len(args) == 1 {
				req.Record = args[0]
			}
			req.DryRun, _ = a.fs.GetBool("dry-run")
			req.Force, _ = a.fs.GetBool("force")
			ws, err := workspaceFromFlags(a)
			if err != nil {
				return err
			}
			var plan *history.Plan
			var applied int
			if ws.mount != nil {
				wreq := control.RevertRequest(req)
				resp, cerr := call(*ws.mount, control.Request{Op: "revert", Revert: &wreq})
				if resp != nil {
					plan, applied = revertPlanFromWire(resp.Plan), resp.Applied
				}
				err = cerr
			} else {
				err = offline(ws, "revert", "", func(s *workspace.Opened) error {
					var rerr error
					plan, applied, rerr = s.Revert(req, cliProcess())
					return rerr
				})
			}
			if jsonOut(a) && plan != nil {
				if perr := printJSON(a, map[string]any{"plan": plan, "applied": applied, "dry_run": req.DryRun}); perr != nil {
					return perr
				}
				return err
			}
			if err == nil && plan != nil && len(plan.Steps) == 0 && plan.AlreadyReverted > 0 {
				what := "record " + req.Record
				if intent != "" {
					what = "intent " + intent
				}
				fmt.Fprintf(a.stdout, "%s is already reverted: an earlier revert undid its %d change(s); nothing to do\n", what, plan.AlreadyReverted)
				return nil
			}
			if plan != nil {
				if plan.AlreadyReverted > 0 {
					fmt.Fprintf(a.stdout, "left out: %d change(s) an earlier revert undid\n", plan.AlreadyReverted)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
				for _, s := range plan.Steps {
					if s.Action == "skip" && s.Note == "" {
						continue
					}
					what := s.Path
					if s.To != "" {
						what = s.Path + " → " + s.To
					}
					note := s.Conflict
					if note != "" {
						note = "CONFLICT: " + note
					} else {
						note = s.Note
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Action, textsafe.Escape(what), s.Event, textsafe.Escape(note))
				}
				tw.Flush()
			}
			if err != nil {
				return err
			}
			if req.DryRun {
				fmt.Fprintln(a.stdout, "dry run: nothing changed")
			} else {
				fmt.Fprintf(a.stdout, "reverted: %d step(s) applied and recorded\n", applied)
			}
			return nil
		},
	}
}

func blameCmd() *command {
	return &command{
		name: "blame", summary: "show which record last wrote each line of a file", usage: "PATH",
		help: `Prints each line of the current file with the intent, time and process of
the record that last wrote it, following renames; "-" marks lines no record
explains (the file as it was before the ledger, or edits made outside the
mount), "human" lines a person took as theirs with intentfs accept.

Examples:
  intentfs blame src/api/handler.go
  intentfs blame --json README.md`,
		flags: func(fs *pflag.FlagSet) {
			sourceFlag(fs)
			fs.String("mount", "", "the mountpoint")
			fs.Bool("json", false, "print JSON")
		},
		run: func(a *app, args []string) error {
			if len(args) != 1 {
				return usagef("give one path")
			}
			ws, err := workspaceFromFlags(a)
			if err != nil {
				return err
			}
			ws.settle(a)
			rel := args[0]
			if filepath.IsAbs(rel) {
				for _, root := range []string{ws.source, mountOf(ws)} {
					if r, err := filepath.Rel(root, rel); err == nil && !strings.HasPrefix(r, "..") {
						rel = r
					}
				}
			}
			lines, err := historySource(ws).Blame(strings.TrimPrefix(rel, "./"))
			if err != nil {
				return err
			}
			if jsonOut(a) {
				return printJSON(a, lines)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 1, ' ', 0)
			for _, l := range lines {
				if l.Record == "" {
					fmt.Fprintf(tw, "-\t\t\t%4d| %s\n", l.Line, blameText(l.Text))
					continue
				}
				who := orDash(l.Intent)
				if l.Contributor == "human" {
					who = "human"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%4d| %s\n", textsafe.Escape(who), l.Time.Local().Format("2006-01-02 15:04:05"),
					textsafe.Escape(l.Process), l.Line, blameText(l.Text))
			}
			return tw.Flush()
		},
	}
}

func mountOf(ws cliWorkspace) string {
	if ws.mount != nil {
		return ws.mount.Mountpoint
	}
	return ws.source
}

func gcCmd() *command {
	return &command{
		name: "gc", summary: "drop stored pre-images no retained record needs", usage: "[--older-than 30d]",
		help: `Removes objects from .orchestration/objects that no record newer than the cut
names (as pre_hash or post_hash) and that have been stored since before the
cut. An object a retained record needs is never removed. It then prints the
store's use against its bound on the copies the daemon makes (intentfs
mount --store-max-bytes; by default 10% of the filesystem, at most 2 GiB):
a mounted workspace refuses a change whose pre-image does not fit
(PREIMAGE_UNAVAILABLE) until gc frees room.

Examples:
  intentfs gc --older-than 30d --dry-run
  intentfs gc --older-than 90d`,
		flags: func(fs *pflag.FlagSet) {
			sourceFlag(fs)
			fs.String("mount", "", "the mountpoint")
			fs.String("older-than", "30d", "keep what records of this period need (30d, 12h, or a date)")
			fs.Bool("dry-run", false, "only count what would be removed")
			fs.Bool("json", false, "print JSON")
		},
		run: func(a *app, args []string) error {
			cut, err := ledger.ParseSince(flagString(a, "older-than"), time.Now())
			if err != nil {
				return usagef("--older-than: %v", err)
			}
			dry, _ := a.fs.GetBool("dry-run")
			ws, err := workspaceFromFlags(a)
			if err != nil {
				return err
			}
			ws.settle(a)
			needed := map[string]bool{}
			err = ledger.Query(ws.layout().LedgerPath(), ledger.Filter{Since: cut}, func(r *ledger.Record) error {
				g := r.Gov()
				needed[ledger.Str(g.PreHash)], needed[ledger.Str(g.PostHash)] = true, true
				return nil
			})
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			n, freed, err := ws.layout().Objects().GC(func(h string) bool { return needed[h] }, cut, dry)
			if err != nil {
				return err
			}
			use := ws.layout().Objects().Usage()
			use.MaxBytes = storeBound(ws, use)
			if jsonOut(a) {
				return printJSON(a, map[string]any{"removed": n, "bytes": freed, "dry_run": dry, "cut": cut, "object_store": use})
			}
			verb := "removed"
			if dry {
				verb = "would remove"
			}
			fmt.Fprintf(a.stdout, "%s %d object(s), %d bytes, not needed by records since %s\n", verb, n, freed, cut.Local().Format(time.RFC3339))
			fmt.Fprintf(a.stdout, "store: %s\n", storeLine(control.StoreUsage(use)))
			return nil
		},
	}
}

// storeBound is the bound of the store at source: the running mount's
// (which may have been given --store-max-bytes), else the default for
// its filesystem.
func storeBound(ws cliWorkspace, use objects.Usage) int64 {
	if ws.mount != nil {
		if resp, err := call(*ws.mount, control.Request{Op: "status"}); err == nil && resp.Status != nil && resp.Status.Store.MaxBytes > 0 {
			return resp.Status.Store.MaxBytes
		}
	}
	var fs unix.Statfs_t
	if unix.Statfs(filepath.Join(ws.source, objects.Dir), &fs) != nil {
		return use.MaxBytes
	}
	return objects.DefaultBound(int64(fs.Blocks) * fs.Bsize)
}
