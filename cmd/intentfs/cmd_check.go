package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/gitcheck"
	"github.com/intentfs/intentfs/internal/gitnotes"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

func checkCmd() *command {
	return &command{
		name: "check", summary: "check that commits hold only governed changes", usage: "[REV_RANGE...]",
		help: `The gate a reviewer or CI runs on what an agent hands over. For every
commit in the range, every path it changes must be accounted for: a
ledger record, made under an intent whose scope covers the path, whose
recorded content (post_hash) is the committed blob's sha256 (a deletion:
a delete record), or a path .intentignore exempts. A merge's changes are
the paths where it differs from every parent (git diff-tree --cc): a merge
that only takes each side's content holds none. Otherwise the commit and
path are named with the problem: "never written through the mount",
"written under INT-002, whose scope does not cover it", "committed content
matches no recorded version". Changes to governance files (.orchestration/,
.intentignore) are listed as notices for review.

Records come from the local ledger and from the git notes under
refs/notes/intentfs (see intentfs notes), so check works on a fresh clone.
A note record counts only as a line of the local ledger or as part of
another origin's whole hash chain; others are ignored (and counted in a
notice). Where the clone has a ledger of its own, it is authoritative:
other origins' records count only with --with-notes (the default without
a local ledger). Notes git cannot read are a notice where no other
origin's record would count, else an error; either way
git update-ref -d refs/notes/intentfs and intentfs notes sync rebuild
them. Scopes are judged by the workspace's current policy.

REV_RANGE is git rev-list syntax. A full commit id is that commit and a
name starting with refs/ is that exact ref, whatever other refs exist; a
plain name that names two refs (refs/main and refs/heads/main) is
refused: name it in full (refs/heads/..., refs/tags/...). A short id that
is also a ref, a refs/ name that is no ref, and reflog names (main@{0},
@{-1}, @{upstream}: the agent writes the reflog in the mount) and
searches (:/text, main^{/text}) are refused too. The default is the merge-base with the upstream up to HEAD: the
daemon's mirror of the
policy's declared upstream (upstream: in active_intents.yaml), which the
agent cannot write; else the declared upstream's remote-tracking branch
or the branch's upstream (@{upstream}), which an agent in the mount can
move: on a clone with a ledger of its own check refuses that base and
asks for the range (intentfs check <base>..HEAD); else all of HEAD's
history. The output says where the base came from. Exit status 1 on any
problem.

Examples:
  intentfs check
  intentfs check 4f1c2e9..HEAD
  intentfs check --with-notes origin/main..HEAD
  intentfs check --json HEAD~20..HEAD | jq '.problems[]'`,
		flags: func(fs *pflag.FlagSet) {
			sourceFlag(fs)
			fs.String("mount", "", "the mountpoint")
			fs.Bool("json", false, "print the report as JSON")
			fs.Bool("strict", false, "count changes to governance files as problems")
			fs.Bool("with-notes", false, "count other origins' records from the notes (whole chains only) on a clone with a ledger of its own; the default without one")
		},
		run: runCheck,
	}
}

func runCheck(a *app, args []string) error {
	for _, r := range args {
		if strings.HasPrefix(r, "-") {
			return usagef("%q: a revision range cannot start with '-'", r)
		}
	}
	ctx := context.Background()
	ws, g, err := gitFromFlags(ctx, a)
	if err != nil {
		return err
	}
	intents, _, err := policy.LoadIntents(filepath.Join(ws.source, policy.IntentsFile))
	if err != nil {
		return err
	}
	ig, _, err := policy.LoadIgnore(ws.source)
	if err != nil {
		return err
	}
	ix := gitcheck.NewIndex()
	var withNotes *bool
	if a.fs.Changed("with-notes") {
		v, _ := a.fs.GetBool("with-notes")
		withNotes = &v
	}
	counts, err := allRecords(ctx, ws, g, withNotes, ix.Add)
	if err != nil {
		return err
	}
	revs := args
	var base *gitcheck.DefaultBase
	if len(revs) == 0 {
		if base, err = gitcheck.DefaultRange(ctx, g.repo, ws.source, intents.Upstream, counts.HasLedger); err != nil {
			return err
		}
		revs = base.Revs
	}
	c := &gitcheck.Checker{Repo: g.repo, Index: ix, Intents: intents, Ignore: ig, Prefix: g.prefix}
	rep, err := c.Check(ctx, revs)
	if err != nil {
		return err
	}
	if !counts.HasLedger {
		hintUnnoted(ctx, g, rep)
	}
	if base != nil {
		base.AdviseBase(ctx, g.repo, rep)
	}
	strict, _ := a.fs.GetBool("strict")
	if strict {
		rep.Problems = append(rep.Problems, rep.Notices...)
		rep.Notices = nil
	}
	if jsonOut(a) {
		out := struct {
			*gitcheck.Report
			Records recordCounts          `json:"records"`
			Base    *gitcheck.DefaultBase `json:"default_base,omitempty"`
		}{rep, counts, base}
		if err := printJSON(a, out); err != nil {
			return err
		}
	} else {
		if base != nil {
			for _, n := range base.Notes {
				fmt.Fprintf(a.stdout, "note: %s\n", printable(n))
			}
			fmt.Fprintf(a.stdout, "range: %s, from %s\n", printable(strings.Join(base.Revs, " ")), base.From)
		}
		printCheck(a, rep, counts)
		if counts.HasLedger {
			for _, b := range gitcheck.NamedBases(args) {
				fmt.Fprintf(a.stdout, "notice: the range starts at %s, a ref an agent in a mount of this clone can move; to check from what the upstream holds, give its commit id or run intentfs check with no range (the declared upstream's mirror)\n", printable(b))
			}
		}
		if base != nil && base.Advice != "" {
			fmt.Fprintf(a.stdout, "note: %s\n", printable(base.Advice))
		}
		if len(args) == 0 && rep.Commits == 0 {
			fmt.Fprintf(a.stdout, "note: the default range %s holds no commit: HEAD is where its upstream is. Name the base you review against: intentfs check <base>..HEAD\n",
				printable(strings.Join(rep.Range, " ")))
		}
	}
	if !rep.OK() {
		return silentFailure{}
	}
	return nil
}

func printCheck(a *app, rep *gitcheck.Report, n recordCounts) {
	if len(rep.Problems)+len(rep.Notices) > 0 {
		tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "COMMIT\tST\tPATH\tPROBLEM")
		for _, f := range rep.Problems {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", shortCommit(f.Commit), f.Status, printable(f.Path), printable(f.Detail))
		}
		for _, f := range rep.Notices {
			fmt.Fprintf(tw, "%s\t%s\t%s\tnotice: %s\n", shortCommit(f.Commit), f.Status, printable(f.Path), f.Detail)
		}
		tw.Flush()
	}
	bad := map[string]bool{}
	for _, f := range rep.Problems {
		bad[f.Commit] = true
	}
	status := "OK"
	if !rep.OK() {
		status = fmt.Sprintf("FAILED (%d problem(s) in %d commit(s))", len(rep.Problems)+rep.Omitted, len(bad))
	}
	fmt.Fprintf(a.stdout, "%s: %s: %d commit(s), %d changed path(s) (%d exempt), against %d record(s) (%d from the local ledger, %d from notes), in %s\n",
		status, printable(strings.Join(rep.Range, " ")), rep.Commits, rep.Changes, rep.Exempt, n.Local+n.Noted, n.Local, n.Noted, rep.Elapsed.Round(1e6))
	if n.Ignored > 0 {
		fmt.Fprintf(a.stdout, "notice: %d record(s) in the notes ignored: not part of a whole chain, or claiming this clone's own chain without being in its ledger (see intentfs verify --notes)\n", n.Ignored)
	}
	if n.Unreadable != "" {
		fmt.Fprintf(a.stdout, "notice: %s\n", n.Unreadable)
	}
	if n.LeftOut > 0 {
		fmt.Fprintf(a.stdout, "notice: %d record(s) of other origins in the notes left out: this clone has a ledger of its own, which alone is counted; --with-notes counts them\n", n.LeftOut)
	}
}

func shortCommit(c string) string { return ledger.ShortHash(c) }

// hintUnnoted adds to each problem of a commit that carries no intentfs
// note here that its records may not have reached this clone: on a clone
// without a ledger of its own, the notes are all check knows, and a
// commit pushed without its notes looks like one made outside any mount.
func hintUnnoted(ctx context.Context, g *gitWorkspace, rep *gitcheck.Report) {
	if len(rep.Problems) == 0 {
		return
	}
	notes, err := gitnotes.List(ctx, g.repo)
	if err != nil {
		return
	}
	noted := map[string]bool{}
	for _, n := range notes {
		noted[n.Commit] = true
	}
	for i, f := range rep.Problems {
		if !noted[f.Commit] {
			rep.Problems[i].Detail += "; this commit has no intentfs note in this clone: if it was made in a mount, fetch its notes (intentfs notes fetch REMOTE)"
		}
	}
}
