package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/policyedit"
	"github.com/intentfs/intentfs/policy"
)

func initCmd() *command {
	return &command{
		name: "init", summary: "scaffold .orchestration/ in a workspace", usage: "[DIR]",
		help: `Writes DIR/.orchestration/active_intents.yaml (a commented example with one
PENDING intent), DIR/.orchestration/.intentignore and
DIR/.orchestration/.gitignore (the ledger, object store, lock and temporary
files are never committed; the ledger travels as git notes). In a git work
tree it also sets notes.rewriteRef so the notes survive amend and rebase.
DIR defaults to the current directory; it is created if its parent exists
(--parents creates the whole path, so a typo does not silently make a
tree). Existing files are never overwritten: in a clone of a repository
that committed its policy, init keeps it, sets up what is missing (the
ignore files, notes.rewriteRef) and says what it kept.

It ends with the next steps: edit the policy, then mount. Where mounting is
not the next step, $INTENTFS_INIT_NEXT says what is instead: intentfs's
container image sets it, because there DIR is the host's checkout seen
from a container that exits after init, and the next step is to start the
image again.

Examples:
  intentfs init ./repo
  intentfs init --parents ~/work/new/repo
  intentfs init --json .`,
		flags: func(fs *pflag.FlagSet) {
			fs.Bool("json", false, "print the written paths as JSON")
			fs.Bool("parents", false, "create DIR's missing parent directories too")
		},
		run: func(a *app, args []string) error {
			if len(args) > 1 {
				return usagef("expected at most one directory, got %d arguments", len(args))
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if parents, _ := a.fs.GetBool("parents"); !parents {
				if err := parentExists(dir); err != nil {
					return err
				}
			}
			written, kept, err := policyedit.ScaffoldMissing(dir)
			if err != nil {
				return err
			}
			gitNotes, err := initGit(dir)
			if err != nil {
				return err
			}
			written = append(written, gitNotes...)
			if jsonOut(a) {
				return printJSON(a, map[string]any{"written": written, "kept": kept})
			}
			for _, p := range written {
				fmt.Fprintf(a.stdout, "wrote %s\n", p)
			}
			for _, p := range kept {
				fmt.Fprintf(a.stdout, "kept  %s (already there; not overwritten)\n", p)
			}
			policyKept := slices.Contains(kept, filepath.Join(dir, policy.IntentsFile))
			fmt.Fprint(a.stdout, initNext(dir, os.Getenv("INTENTFS_INIT_NEXT"), policyKept))
			return nil
		},
	}
}

// parentExists refuses a DIR whose parent directory is missing: creating
// the whole path is --parents' job.
func parentExists(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	st, err := os.Stat(parent)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist, so %s would be created with all its parents; create it first, or pass --parents", parent, dir)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", parent)
	}
	return nil
}

// initNext is init's closing hint. next, from $INTENTFS_INIT_NEXT,
// replaces the mount step, and the policy is then named relative to the
// checkout: in a container DIR is a path the user does not see.
func initNext(dir, next string, policyKept bool) string {
	if policyKept && next == "" {
		return fmt.Sprintf("\nThe policy %s/%s was already there (committed with the repository): check its intents with intentfs intent list --source %s,\nthen: intentfs doctor --source %s --agent agent && sudo intentfs mount %s MOUNTPOINT\n", dir, policy.IntentsFile, dir, dir, dir)
	}
	if next != "" {
		return fmt.Sprintf("\nNext: edit %s in the checkout (set an intent's status: IN_PROGRESS and its owned_scope),\nthen: %s\n", policy.IntentsFile, next)
	}
	return fmt.Sprintf("\nNext: edit %s/%s (set status: IN_PROGRESS),\nthen: intentfs doctor --source %s --agent agent && sudo intentfs mount %s MOUNTPOINT\n", dir, policy.IntentsFile, dir, dir)
}
