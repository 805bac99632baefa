package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/scopesuggest"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/internal/workflow"
	"github.com/intentfs/intentfs/ledger"
)

func policyCmd() *command {
	return &command{
		name: "policy", summary: "tune the policy from what agents did", usage: "SUBCOMMAND [flags]",
		help: `Tools that shape the policy from the ledger.

Examples:
  intentfs policy suggest --intent INT-001 --since 7d
  intentfs policy suggest --intent INT-001 --write`,
		subcommands: []*command{policySuggestCmd()},
	}
}

// maxSuggestPaths bounds the distinct paths a suggestion reads from the
// ledger: past it the proposal says it is partial rather than grow.
const maxSuggestPaths = 100000

// scopeSuggestion is what `intentfs policy suggest --json` prints.
type scopeSuggestion struct {
	Intent string `json:"intent"`
	// Current is the intent's owned_scope; Add the globs proposed to
	// cover what was written outside it.
	Current []string `json:"current"`
	Add     []string `json:"add"`
	// Written counts the distinct paths the intent's changes touched;
	// Outside lists those its current scope does not cover.
	Written int      `json:"written"`
	Outside []string `json:"outside"`
	// Skipped are governance paths no owned_scope grants.
	Skipped []string `json:"skipped,omitempty"`
	// Truncated is set when more than maxSuggestPaths paths were read.
	Truncated bool `json:"truncated,omitempty"`
	// WroteBack is set when --write added Add to the policy file.
	WroteBack bool `json:"wrote_back"`
}

func policySuggestCmd() *command {
	return &command{
		name: "suggest", summary: "propose owned_scope globs that cover what was written", usage: "[--intent ID] [--since T] [--mount M | --source DIR] [--write] [--json]",
		help: `Reads the changes an intent's agents made from the ledger (allowed ones, and
in observe mode the would-deny ones the policy refuses) and proposes the
owned_scope globs that cover those its scope does not: several files of one
directory become dir/*.ext or dir/*, changes spread over subdirectories
dir/**. It never proposes a glob at the workspace root (root files are named
one by one) nor one for governance paths (.orchestration/, ignore files,
.git), which no scope grants. Prints the intent's owned_scope as YAML with
the proposed globs marked; --write adds them to the policy file (comments,
layout, owner and mode kept; through the daemon when mounted, which records
the scope change in the ledger).

--intent defaults to the mount's active intent.

Examples:
  intentfs policy suggest --intent INT-001
  intentfs policy suggest --intent INT-001 --since 7d --json | jq .add
  intentfs policy suggest --mount /workspace --write`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint")
			sourceFlag(fs)
			fs.String("intent", "", "the intent (default: the mount's active intent)")
			fs.String("since", "", "only changes since a duration ago (30m, 2h, 7d) or a time (2026-01-31, RFC 3339)")
			fs.Bool("write", false, "add the proposed globs to the intent's owned_scope in the policy file")
			fs.Bool("json", false, "print the proposal as JSON")
		},
		run: func(a *app, args []string) error {
			if len(args) != 0 {
				return usagef("unexpected arguments %v", args)
			}
			write, _ := a.fs.GetBool("write")
			retry := "policy suggest {mount}"
			if in := flagString(a, "intent"); in != "" {
				retry += " --intent " + shellWord(in)
			}
			retry += " --write"
			ws, err := workspaceFromFlags(a)
			if err != nil {
				if write {
					return withSudoHint(err, retry)
				}
				return err
			}
			ws.settle(a)
			if write && ws.mount == nil {
				if err := uncontrolledMountOf(ws.source); err != nil {
					return withSudoHint(err, retry)
				}
			}
			f := ledger.Filter{Intent: flagString(a, "intent")}
			if s := flagString(a, "since"); s != "" {
				t, err := ledger.ParseSince(s, time.Now())
				if err != nil {
					return usagef("--since: %v", err)
				}
				f.Since = t
			}
			if f.Intent == "" && ws.mount != nil {
				resp, err := call(*ws.mount, control.Request{Op: "status"})
				if err != nil {
					return err
				}
				f.Intent = resp.Status.ActiveIntent
			}
			if f.Intent == "" {
				return usagef("no intent: give --intent ID (no mount with an active intent was found)")
			}
			intents, err := (&workflow.Workflow{Source: ws.source}).Load()
			if err != nil {
				return err
			}
			in := intents.Get(f.Intent)
			if in == nil {
				return fmt.Errorf("intent %s is not defined in %s: see `intentfs intent list`", f.Intent, intents.File)
			}
			written, truncated, err := writtenPaths(ws, f)
			if err != nil {
				return err
			}
			s := scopeSuggestion{Intent: in.ID, Current: slices.Clone(in.OwnedScope), Written: len(written), Truncated: truncated,
				Outside: []string{}, Add: []string{}}
			for _, p := range written {
				if !in.InScope(p) {
					s.Outside = append(s.Outside, p)
				}
			}
			res := scopesuggest.Suggest(s.Outside)
			s.Skipped = res.Skipped
			for _, g := range res.Globs {
				if !slices.Contains(s.Current, g) {
					s.Add = append(s.Add, g)
				}
			}
			if write && len(s.Add) > 0 {
				if err := runIntentOp(ws, workflow.Request{Action: "scope", ID: in.ID, Add: s.Add}); err != nil {
					return fmt.Errorf("writing the proposed scope of %s: %w", in.ID, err)
				}
				s.WroteBack = true
			}
			if jsonOut(a) {
				return printJSON(a, s)
			}
			return printSuggestion(a, s)
		},
	}
}

// writtenPaths lists, in first-seen order, the distinct paths (and
// from_paths) of the changes the filter selects. A directory only made
// (mkdir) with something written below it is left out: a scope that
// covers what is below allows the mkdir.
func writtenPaths(ws cliWorkspace, f ledger.Filter) ([]string, bool, error) {
	onlyMade := map[string]bool{}
	var out []string
	truncated := false
	add := func(p string, mkdir bool) {
		if p == "" {
			return
		}
		if made, seen := onlyMade[p]; seen {
			onlyMade[p] = made && mkdir
			return
		}
		if len(out) >= maxSuggestPaths {
			truncated = true
			return
		}
		onlyMade[p] = mkdir
		out = append(out, p)
	}
	collect := func(r *ledger.Record) error {
		g := r.Gov()
		if ledger.ClassOf(g.Event) == "" {
			return nil
		}
		add(r.Path(), g.Event == ledger.EventMkdir)
		add(g.FromPath, false)
		return nil
	}
	var err error
	if hasLocalLedger(ws) {
		err = ledger.Query(ws.layout().LedgerPath(), f, collect)
	} else {
		err = queryNotes(context.Background(), ws, f, collect)
	}
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return nil, false, err
	}
	parents := map[string]bool{}
	for _, p := range out {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			parents[d] = true
		}
	}
	out = slices.DeleteFunc(out, func(p string) bool { return onlyMade[p] && parents[p] })
	return out, truncated, nil
}

func printSuggestion(a *app, s scopeSuggestion) error {
	w := a.stdout
	fmt.Fprintf(w, "# %s: %d path(s) written, %d outside its owned_scope", s.Intent, s.Written, len(s.Outside))
	if s.Truncated {
		fmt.Fprintf(w, " (only the first %d paths were read: narrow it with --since)", maxSuggestPaths)
	}
	fmt.Fprintln(w)
	for _, p := range s.Skipped {
		fmt.Fprintf(w, "# not proposed (a governance path no scope grants): %s\n", textsafe.Escape(p))
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, g := range s.Current {
		seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: g, Style: yaml.DoubleQuotedStyle})
	}
	for _, g := range s.Add {
		seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: g, Style: yaml.DoubleQuotedStyle, LineComment: "proposed"})
	}
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "owned_scope"}, seq}}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("printing the proposal: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("printing the proposal: %w", err)
	}
	switch {
	case len(s.Add) == 0:
		fmt.Fprintf(w, "# the owned_scope of %s already covers every change\n", s.Intent)
	case s.WroteBack:
		fmt.Fprintf(w, "# added %d glob(s) to the owned_scope of %s\n", len(s.Add), s.Intent)
	default:
		fmt.Fprintf(w, "# add them with: intentfs policy suggest --intent %s --write\n", s.Intent)
	}
	return nil
}
