package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitnotes"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

func notesCmd() *command {
	flags := func(fs *pflag.FlagSet) {
		sourceFlag(fs)
		fs.String("mount", "", "the mountpoint")
		fs.Bool("json", false, "print the result as JSON")
	}
	return &command{
		name: "notes", summary: "carry the ledger with the repository as git notes", usage: "sync|push|fetch",
		help: `The ledger's records travel with the repository as git notes under
refs/notes/intentfs: each commit's note holds the records that produced it,
as Agent Trace JSON lines (the ledger's exact lines, so each origin's hash
chain can be verified anywhere). intentfs log, blame, check and verify read
them on a clone without a ledger of its own.

git itself moves them with these refspecs:
  git push origin refs/notes/intentfs:refs/notes/intentfs
  git fetch origin +refs/notes/intentfs:refs/notes/remotes/origin/intentfs
  git notes --ref=intentfs merge -s cat_sort_uniq refs/notes/remotes/origin/intentfs
and notes.rewriteRef=refs/notes/intentfs (set by sync and init) carries them
across git commit --amend and git rebase.

Examples:
  intentfs notes sync
  intentfs notes push origin
  intentfs notes fetch origin`,
		subcommands: []*command{
			{
				name: "sync", summary: "attach the ledger's new records to the commits they produced", usage: "",
				help: `Attaches each record of the local ledger that is in no note yet to the commit
that contains its change (the path with the recorded content, or its
deletion), among the commits reachable from HEAD; records between two
commits (selections, denials, transitions) ride with the next one. Records
of work not committed yet stay pending. Also sets notes.rewriteRef.

Examples:
  intentfs notes sync
  intentfs notes sync --json`,
				flags: flags,
				run:   runNotesSync,
			},
			{
				name: "push", summary: "fetch, merge and push the notes to a remote", usage: "[REMOTE]",
				help: `Fetches REMOTE's notes, merges them with the local ones by record id, and
pushes refs/notes/intentfs to REMOTE (default origin). In a mount, or on the
source of one, it first waits (up to 10 s) for the mount to attach the last
commit's records to it, which it does a second after a commit. Hooks do not run; the
transport is limited to file, ssh and https, with the remote's URL read from
the repository and its uploadpack, receivepack and credential helpers
ignored. For other setups run the git commands of "intentfs notes --help".

Examples:
  intentfs notes push
  intentfs notes push upstream`,
				flags: flags,
				run:   func(a *app, args []string) error { return runNotesRemote(a, args, pushAfterAttach(a)) },
			},
			{
				name: "fetch", summary: "fetch a remote's notes and merge them by record id", usage: "[REMOTE]",
				help: `Fetches REMOTE's refs/notes/intentfs (default origin) into
refs/notes/remotes/REMOTE/intentfs and merges it into refs/notes/intentfs
with git's cat_sort_uniq strategy: each record's line once, none lost.

Examples:
  intentfs notes fetch
  intentfs notes fetch upstream`,
				flags: flags,
				run:   func(a *app, args []string) error { return runNotesRemote(a, args, gitnotes.Fetch) },
			},
		},
	}
}

func runNotesSync(a *app, args []string) error {
	if len(args) != 0 {
		return usagef("unexpected arguments %v", args)
	}
	ctx := context.Background()
	ws, g, err := gitFromFlags(ctx, a)
	if err != nil {
		return err
	}
	ws.settle(a)
	// The policy says what the notes carry beyond what attribution needs;
	// a policy that does not load lets them carry the least.
	in, _, err := policy.LoadIntents(filepath.Join(ws.source, policy.IntentsFile))
	if err != nil {
		fmt.Fprintf(a.stderr, "intentfs: the policy does not load (%v): the notes carry only what attribution needs\n", err)
	}
	res, err := gitnotes.Sync(ctx, g.repo, ws.layout().LedgerPath(), g.prefix, ledger.KeepOf(in.NotesInclude()))
	if err != nil {
		return err
	}
	if jsonOut(a) {
		return printJSON(a, res)
	}
	commits := make([]string, 0, len(res.Commits))
	for c := range res.Commits {
		commits = append(commits, c)
	}
	sort.Strings(commits)
	for _, c := range commits {
		fmt.Fprintf(a.stdout, "%s  +%d record(s)\n", shortCommit(c), res.Commits[c])
	}
	fmt.Fprintf(a.stdout, "attached %d record(s) to %d commit(s); %d already in notes; %d pending (not committed yet)\n",
		res.Attached, len(res.Commits), res.AlreadyNoted, res.Pending)
	return nil
}

func runNotesRemote(a *app, args []string, op func(context.Context, *gitexec.Repo, string) (string, error)) error {
	if len(args) > 1 {
		return usagef("give at most one remote")
	}
	remote := "origin"
	if len(args) == 1 {
		remote = args[0]
	}
	ctx := context.Background()
	_, g, err := gitFromFlags(ctx, a)
	if err != nil {
		return err
	}
	out, err := op(ctx, g.repo, remote)
	if jsonOut(a) {
		res := map[string]any{"remote": remote, "output": out, "ok": err == nil}
		if err != nil {
			res["error"] = err.Error()
		}
		if perr := printJSON(a, res); perr != nil {
			return perr
		}
		if err != nil {
			return silentFailure{}
		}
		return nil
	}
	fmt.Fprint(a.stdout, out)
	return err
}

// headNoteWait bounds how long a push in a mount waits for the mount to
// attach the records of the last commit (it does so a second after a
// burst of commits).
const headNoteWait = 10 * time.Second

// pushAfterAttach is gitnotes.Push that, in a mount (the agent's usual
// place: commit, then push), first waits for HEAD's note: pushed at once,
// the notes lacked the commit just made, and a reviewer's check found it
// unaccounted for.
func pushAfterAttach(a *app) func(context.Context, *gitexec.Repo, string) (string, error) {
	return func(ctx context.Context, repo *gitexec.Repo, remote string) (string, error) {
		if servedByAMount(repo.Dir) {
			deadline := time.Now().Add(headNoteWait)
			for !headNoted(ctx, repo) {
				if time.Now().After(deadline) {
					fmt.Fprintf(a.stderr, "intentfs notes push: HEAD carries no intentfs note after %v (the mount attaches notes a second after a commit; a commit from elsewhere has none): pushing the notes there are\n", headNoteWait)
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		return gitnotes.Push(ctx, repo, remote)
	}
}

// headNoted reports whether HEAD has a note under refs/notes/intentfs.
func headNoted(ctx context.Context, repo *gitexec.Repo) bool {
	_, err := repo.Output(ctx, "notes", "--ref="+gitnotes.Ref, "list", "HEAD")
	return err == nil
}

// servedByAMount reports whether dir is an intentfs mount (seen from a
// session, where the registry is hidden) or the source of one.
func servedByAMount(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, fsnode.ControlDirName, "status")); err == nil {
		return true
	}
	entries, _ := mounts.DefaultRegistry().List()
	for _, e := range entries {
		if e.Source == dir || e.Mountpoint == dir {
			return true
		}
	}
	return false
}
