package main

import (
	"github.com/intentfs/intentfs/internal/policyedit"

	"fmt"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/policy"
)

func initCmd() *command {
	return &command{
		name: "init", summary: "scaffold .orchestration/ in a workspace", usage: "[DIR]",
		help: `Writes DIR/.orchestration/active_intents.yaml (a commented example with one
PENDING intent) and DIR/.orchestration/.intentignore. DIR defaults to the
current directory. Existing files are never overwritten.

Examples:
  intentfs init ./repo
  intentfs init --json .`,
		flags: func(fs *pflag.FlagSet) { fs.Bool("json", false, "print the written paths as JSON") },
		run: func(a *app, args []string) error {
			if len(args) > 1 {
				return usagef("expected at most one directory, got %d arguments", len(args))
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			written, err := policyedit.Scaffold(dir)
			if err != nil {
				return err
			}
			if jsonOut(a) {
				return printJSON(a, map[string]any{"written": written})
			}
			for _, p := range written {
				fmt.Fprintf(a.stdout, "wrote %s\n", p)
			}
			fmt.Fprintf(a.stdout, "\nNext: edit %s/%s (set status: IN_PROGRESS),\nthen: intentfs mount %s MOUNTPOINT\n", dir, policy.IntentsFile, dir)
			return nil
		},
	}
}
