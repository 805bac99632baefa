package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/gitcheck"
	"github.com/intentfs/intentfs/internal/gitnotes"
	"github.com/intentfs/intentfs/internal/recordsource"
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
matches no recorded version".

The rules come from a revision the range cannot change, never from the
work tree (which in CI is the pull request under review) nor from the
range's head: the policy (.orchestration/active_intents.yaml) and the
ignore files (.intentignore, .orchestration/.intentignore) are read from
the git objects of the range's base (B for B..H and ^B H, the merge-base
for B...H; for the default range, where it starts), or of the revision
--policy-from names. Only regular files are read (a symlink there is an
error), each bounded in size. The output says where the rules came from:
  rules: .orchestration/active_intents.yaml at 24e00bb1c0de (base); ...
A range with no base (all of HEAD) needs --policy-from.

A change inside the range to a governance file is a problem, whatever
an ignore file says: the policy, an ignore file, any other file of
.orchestration/ that decides rules, the agents' hook settings that
intentfs hook install writes (.claude/settings.json, .codex/hooks.json),
and a .gitattributes line that attaches a filter, a diff or merge driver
or text conversion. The pull request cannot be judged by the rules it
brings: a human lands such a change on the base first (as with
CODEOWNERS), and the range is then checked by it. Changes to the
records the daemon keeps in .orchestration/ (intent map, lessons) are
notices for review; --strict makes them problems too.

Records come from the local ledger and from the git notes under
refs/notes/intentfs (see intentfs notes), so check works on a fresh clone.
A note record counts only as a line of the local ledger or as part of
another origin's whole hash chain; others are ignored (and counted in a
notice). Where the clone has a ledger of its own, it is authoritative:
other origins' records count only with --with-notes (the default without
a local ledger). Notes git cannot read are a notice where no other
origin's record would count, else an error; either way
git update-ref -d refs/notes/intentfs and intentfs notes sync rebuild
them.

Signatures: a mount with --signing-key signs its chain with checkpoints
(see docs/signing.md). With an allowed-signers file (--allowed-signers
FILE, else gpg.ssh.allowedSignersFile of your global or system git config;
never the repository's own config, which an agent can write), a record
counts only when a later checkpoint of its chain, signed by a key the file
allows for the namespace intentfs-ledger@intentfs at the checkpoint's
time, covers it; a path written only by records no signature covers is
named: "written by an unsigned chain (origin 3f2a9c1e…): not counted".
Without one, records count signed or not, and the output says that
signatures were not checked.

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
history, which has no base to take the rules from: name one with
--policy-from. The output says where the base came from. The declared upstream
is read from the work tree's policy only to find where the default range
starts: in CI, give the range. Exit status 1 on any problem.

Examples:
  intentfs check
  intentfs check 4f1c2e9..HEAD
  intentfs check --with-notes origin/main..HEAD
  intentfs check --json HEAD~20..HEAD | jq '.problems[]'
  # CI, on a fresh clone with the pull request checked out: the rules
  # come from the base branch, never from the pull request
  intentfs notes fetch origin
  intentfs check "$(git rev-parse origin/main)..HEAD"
  intentfs check --policy-from origin/main "$(git merge-base origin/main HEAD)..HEAD"
  intentfs check --json origin/main..HEAD | jq '.rules'
  # only records signed by a key of the team's signers file count
  git show origin/main:.github/allowed_signers > /tmp/allowed_signers
  intentfs check --allowed-signers /tmp/allowed_signers origin/main..HEAD`,
		flags: func(fs *pflag.FlagSet) {
			sourceFlag(fs)
			fs.String("mount", "", "the mountpoint")
			fs.Bool("json", false, "print the report as JSON")
			fs.String("policy-from", "", "read the policy and ignore files from this revision (not one the range holds) instead of the range's base")
			fs.Bool("strict", false, "count the notices (changes to the intent map and lessons) as problems too")
			allowedSignersFlag(fs)
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
	ws.settle(a)
	if err := gitcheck.CheckNames(ctx, g.repo, args); err != nil {
		return err
	}
	ix := gitcheck.NewIndex()
	var withNotes *bool
	if a.fs.Changed("with-notes") {
		v, _ := a.fs.GetBool("with-notes")
		withNotes = &v
	}
	signers, err := loadSigners(ctx, a, g)
	if err != nil {
		return err
	}
	unsigned := unsignedPaths{}
	counts, err := allRecords(ctx, ws, g, withNotes, signers.Trust, recordsource.Sink{Counted: ix.Add, Unsigned: unsigned.add})
	if err != nil {
		return err
	}
	revs := args
	var base *gitcheck.DefaultBase
	if len(revs) == 0 {
		// The declared upstream only picks where the default range
		// starts; the rules that judge it come from that start below.
		intents, _, err := policy.LoadIntents(filepath.Join(ws.source, policy.IntentsFile))
		if err != nil {
			return err
		}
		if base, err = gitcheck.DefaultRange(ctx, g.repo, ws.source, intents.Upstream, counts.HasLedger); err != nil {
			return err
		}
		revs = base.Revs
	}
	rules, err := checkRules(ctx, a, g, revs)
	if errors.Is(err, gitcheck.ErrNoBase) && base != nil && base.NoUpstream {
		return errors.New(base.NoBaseAdvice(ctx, g.repo))
	}
	if err != nil {
		return err
	}
	c := &gitcheck.Checker{Repo: g.repo, Index: ix, Intents: rules.Intents, Ignore: rules.Ignore, TrustedRules: true, Prefix: g.prefix}
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
	unsigned.explain(rep, g.prefix)
	strict, _ := a.fs.GetBool("strict")
	if strict {
		rep.Problems = append(rep.Problems, rep.Notices...)
		rep.Notices = nil
	}
	if jsonOut(a) {
		out := struct {
			*gitcheck.Report
			Records recordsource.Counts   `json:"records"`
			Base    *gitcheck.DefaultBase `json:"default_base,omitempty"`
			Rules   *gitcheck.Rules       `json:"rules"`
			Signers *signersChoice        `json:"signers"`
		}{rep, counts, base, rules, signers}
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
		printSignatures(a, signers, counts.Signatures)
		printRules(a, rules)
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

func printCheck(a *app, rep *gitcheck.Report, n recordsource.Counts) {
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
	for _, s := range n.Skipped {
		fmt.Fprintf(a.stdout, "notice: note of %s; its records are not counted\n", printable(s))
	}
	if n.LeftOut > 0 {
		fmt.Fprintf(a.stdout, "notice: %d record(s) of other origins in the notes left out: this clone has a ledger of its own, which alone is counted; --with-notes counts them\n", n.LeftOut)
	}
}

// checkRules reads the rules that judge revs from the revision
// --policy-from names, else from the range's base: a revision the range
// does not hold, never the work tree (in CI, the pull request's head).
func checkRules(ctx context.Context, a *app, g *gitWorkspace, revs []string) (*gitcheck.Rules, error) {
	from := flagString(a, "policy-from")
	var commit string
	var err error
	if from != "" {
		if commit, err = gitcheck.ResolveRulesRev(ctx, g.repo, from, revs); err != nil {
			return nil, err
		}
	} else if commit, err = gitcheck.RangeBase(ctx, g.repo, revs); err != nil {
		return nil, fmt.Errorf("%w: check reads the policy and ignore files from a revision the range cannot change; give a range with a base (intentfs check BASE..HEAD) or name the revision: intentfs check --policy-from REV %s",
			err, printable(strings.Join(revs, " ")))
	}
	rules, err := gitcheck.LoadRules(ctx, g.repo, commit, g.prefix)
	if err != nil {
		return nil, err
	}
	rules.From = gitcheck.RulesFromBase
	if from != "" {
		rules.From, rules.Rev = gitcheck.RulesFromOption, from
	}
	return rules, nil
}

// printRules says where the rules of the check came from.
func printRules(a *app, r *gitcheck.Rules) {
	from := r.From
	if r.Rev != "" {
		from += " " + printable(r.Rev)
	}
	ignore := "no ignore file"
	if len(r.IgnoreFiles) > 0 {
		ignore = "ignore files: " + strings.Join(r.IgnoreFiles, ", ")
	}
	fmt.Fprintf(a.stdout, "rules: %s at %s (%s); %s\n", r.Policy, shortCommit(r.Commit), from, ignore)
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
		// A governance change is a problem with or without records.
		if !noted[f.Commit] && f.Kind != gitcheck.KindGovernance {
			rep.Problems[i].Detail += "; this commit has no intentfs note in this clone: if it was made in a mount, fetch its notes (intentfs notes fetch REMOTE)"
		}
	}
}
