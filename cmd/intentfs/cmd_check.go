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
non-merge commit in the range, every path it changes must be accounted for:
a ledger record, made under an intent whose scope covers the path, whose
recorded content (post_hash) is the committed blob's sha256 (a deletion: a
delete record), or a path .intentignore exempts. Otherwise the commit and
path are named with the problem: "never written through the mount",
"written under INT-002, whose scope does not cover it", "committed content
matches no recorded version". Changes to governance files (.orchestration/,
.intentignore) are listed as notices for review.

Records come from the local ledger and from the git notes under
refs/notes/intentfs (see intentfs notes), so check works on a fresh clone.
Scopes are judged by the workspace's current policy. REV_RANGE is git
rev-list syntax; the default is the merge-base with the upstream up to
HEAD: the policy's declared upstream (upstream: in active_intents.yaml), as
fetched from the remote with that URL, else the branch's upstream
(@{upstream}), else all of HEAD's history. Exit status 1 on any problem.

Examples:
  intentfs check
  intentfs check origin/main..HEAD
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
	if len(revs) == 0 {
		if revs, err = defaultRange(ctx, g, intents.Upstream); err != nil {
			return err
		}
	}
	c := &gitcheck.Checker{Repo: g.repo, Index: ix, Intents: intents, Ignore: ig, Prefix: g.prefix}
	rep, err := c.Check(ctx, revs)
	if err != nil {
		return err
	}
	if !counts.HasLedger {
		hintUnnoted(ctx, g, rep)
	}
	strict, _ := a.fs.GetBool("strict")
	if strict {
		rep.Problems = append(rep.Problems, rep.Notices...)
		rep.Notices = nil
	}
	if jsonOut(a) {
		out := struct {
			*gitcheck.Report
			Records recordCounts `json:"records"`
		}{rep, counts}
		if err := printJSON(a, out); err != nil {
			return err
		}
	} else {
		printCheck(a, rep, counts)
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

// defaultRange is the merge-base with the upstream up to HEAD, or HEAD:
// the policy's declared upstream as a remote of this clone has it, else
// the branch's own upstream.
func defaultRange(ctx context.Context, g *gitWorkspace, declared *policy.Upstream) ([]string, error) {
	if _, err := g.repo.Line(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return nil, fmt.Errorf("the repository has no commits yet")
	}
	up := declaredUpstream(ctx, g, declared)
	if up == "" {
		var err error
		if up, err = g.repo.Line(ctx, "rev-parse", "--verify", "--quiet", "@{upstream}"); err != nil || up == "" {
			return []string{"HEAD"}, nil
		}
	}
	base, err := g.repo.Line(ctx, "merge-base", "HEAD", up)
	if err != nil || base == "" {
		return []string{"HEAD"}, nil
	}
	return []string{base + "..HEAD"}, nil
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
	if n.LeftOut > 0 {
		fmt.Fprintf(a.stdout, "notice: %d record(s) of other origins in the notes left out: this clone has a ledger of its own, which alone is counted; --with-notes counts them\n", n.LeftOut)
	}
}

func shortCommit(c string) string { return ledger.ShortHash(c) }

// declaredUpstream returns the commit of the policy's declared upstream as
// this clone last fetched it: the remote-tracking branch of the remote
// whose URL is the declared one. "" when there is none.
func declaredUpstream(ctx context.Context, g *gitWorkspace, declared *policy.Upstream) string {
	branch, ok := strings.CutPrefix(declaredRef(declared), "refs/heads/")
	if !ok {
		return ""
	}
	out, err := g.repo.Output(ctx, "config", "--get-regexp", `^remote\..*\.url$`)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		key, url, ok := strings.Cut(line, " ")
		remote := strings.TrimSuffix(strings.TrimPrefix(key, "remote."), ".url")
		if !ok || !sameURL(url, declared.URL) || strings.HasPrefix(remote, "-") {
			continue
		}
		if c, err := g.repo.Line(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", "refs/remotes/"+remote+"/"+branch+"^{commit}"); err == nil && c != "" {
			return c
		}
	}
	return ""
}

func declaredRef(u *policy.Upstream) string {
	if u == nil {
		return ""
	}
	return u.Ref
}

// sameURL compares two remote URLs, a path's trailing slash and a
// file:// prefix aside.
func sameURL(a, b string) bool {
	norm := func(s string) string {
		s = strings.TrimPrefix(s, "file://")
		if strings.HasPrefix(s, "/") {
			s = filepath.Clean(s)
		}
		return strings.TrimSuffix(s, "/")
	}
	return norm(a) == norm(b)
}

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
