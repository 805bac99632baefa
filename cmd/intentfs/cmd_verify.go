package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

func verifyCmd() *command {
	return &command{
		name: "verify", summary: "prove the ledger is intact and matches the tree", usage: "",
		help: `Checks that every ledger line (across rotated files) parses and is a valid
Agent Trace record, that the hash chain is unbroken, and that every file the
ledger says exists has, on disk now, the content of its latest record. It
reports each line that was edited, inserted, deleted or reordered, each file
changed or deleted behind the ledger's back, each file changed after the
ledger began that no record names, and each recorded version whose bytes are
gone, or no longer hash to their name (each kept version a record names is
read once: written after it was kept, revert refuses it). Exit status 0 only
when all holds; 1 otherwise.

On a clone without a local ledger (or with --notes) it verifies the ledgers
carried in the git notes (intentfs notes): each origin's hash chain whole,
with no record missing, changed or forged between two others. With an
allowed-signers file (--allowed-signers FILE, else gpg.ssh.allowedSignersFile
of your global or system git config), every record must also be covered by
a checkpoint an allowed signer signed (see docs/signing.md); without one,
signatures are not checked, and the output says so.

Examples:
  intentfs verify --source ./repo
  intentfs verify --notes
  intentfs verify --notes --allowed-signers ~/.config/git/allowed_signers
  intentfs verify --mount /workspace --json`,
		flags: func(fs *pflag.FlagSet) {
			sourceFlag(fs)
			fs.String("mount", "", "the mountpoint")
			fs.Bool("json", false, "print the report as JSON")
			allowedSignersFlag(fs)
			fs.Bool("notes", false, "verify the ledgers carried in git notes, each origin's chain (the default without a local ledger)")
		},
		run: func(a *app, args []string) error {
			if len(args) != 0 {
				return usagef("unexpected arguments %v", args)
			}
			ws, err := workspaceFromFlags(a)
			if err != nil {
				return err
			}
			ws.settle(a)
			if notes, _ := a.fs.GetBool("notes"); notes || !hasLocalLedger(ws) && isGitWorkTree(ws) {
				return verifyNotes(a, ws)
			}
			ig, _, _ := policy.LoadIgnore(ws.source)
			opts := ledger.VerifyOptions{Ledger: ws.layout().LedgerPath(), Source: ws.source,
				Exempt: func(rel string, isDir bool) bool { return ig.Match(rel, isDir) }, ListObjects: ws.layout().Objects().List,
				CheckObject: ws.layout().Objects().Check}
			if _, err := os.ReadDir(ws.layout().ObjectsDir()); errors.Is(err, fs.ErrPermission) {
				// The store is private to its owner (root): a user who
				// cannot list it would see every kept version as missing.
				opts.ListObjects, opts.CheckObject = nil, nil
				fmt.Fprintf(a.stderr, "intentfs verify: the object store %s is not readable by you (uid %d), so the kept copies of replaced versions are not checked: run as root (sudo intentfs verify) to check pre-images\n",
					textsafe.Escape(ws.layout().ObjectsDir()), os.Getuid())
			}
			bar := newProgress(a, "verifying")
			opts.Progress = bar.update
			rep := ledger.Verify(opts)
			bar.done()
			if jsonOut(a) {
				if err := printJSON(a, rep); err != nil {
					return err
				}
			} else {
				for _, p := range rep.Problems {
					fmt.Fprintln(a.stdout, textsafe.Escape(p.String()))
				}
				status := "OK"
				if !rep.OK() {
					status = fmt.Sprintf("FAILED: %d problem(s)", len(rep.Problems))
				}
				fmt.Fprintf(a.stdout, "%s: %d records in %d file(s), hash chain %s, %d tracked files checked, in %s\n",
					status, rep.Records, len(rep.Files), map[bool]string{true: "intact", false: "BROKEN"}[rep.ChainOK()], rep.Tracked, rep.Elapsed.Round(1e6))
			}
			if !rep.OK() {
				hintUnsettled(a, ws, rep)
				return silentFailure{}
			}
			return nil
		},
	}
}

// hintUnsettled says, when verify found files that differ from the ledger
// while the source is mounted by a daemon this user may not control, that
// the daemon may not have recorded a change of the last moments (it was
// not asked to: see cliWorkspace.settle), and which command asks it.
func hintUnsettled(a *app, ws cliWorkspace, rep *ledger.Report) {
	if ws.mount != nil || !slices.ContainsFunc(rep.Problems, func(p ledger.Problem) bool {
		return p.Kind == ledger.ProblemUntraced || p.Kind == ledger.ProblemChanged || p.Kind == ledger.ProblemDeleted
	}) {
		return
	}
	if err := uncontrolledMountOf(ws.source); err != nil {
		fmt.Fprintf(a.stderr, "intentfs verify: %v; a change made through the mount in the last moments may not be recorded yet, and that command has the daemon record it first\n",
			withSudoHint(err, "verify {mount}"))
	}
}

// workspaceFromFlags resolves --mount or --source (or the current
// directory).
func workspaceFromFlags(a *app) (cliWorkspace, error) {
	if mnt := flagString(a, "mount"); mnt != "" {
		e, err := findMount(mnt)
		if err != nil {
			return cliWorkspace{}, err
		}
		return cliWorkspace{source: e.Source, mount: &e}, nil
	}
	return resolveWorkspace(flagString(a, "source"))
}
