package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/daemon"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/policyedit"
	"github.com/intentfs/intentfs/internal/runner"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/internal/workflow"
	"github.com/intentfs/intentfs/internal/workspace"
	"github.com/intentfs/intentfs/policy"
)

func sourceFlag(fs *pflag.FlagSet) {
	fs.String("source", "", "the workspace (default: the mount or workspace containing the current directory)")
}

func intentCmd() *command {
	transition := func(name, summary, to string) *command {
		return &command{
			name: name, summary: summary, usage: "ID [--reason TEXT]",
			help: fmt.Sprintf(`Moves the intent to %s, as the lifecycle allows, writes the policy file back
(comments and layout kept) and records the transition in the ledger. Works on
a mounted source (through its daemon, which applies it at once) or an
unmounted one.

Example:
  intentfs intent %s INT-001 --reason "waiting for the API review"`, to, name),
			flags: func(fs *pflag.FlagSet) { sourceFlag(fs); fs.String("reason", "", "why, for the ledger") },
			run: func(a *app, args []string) error {
				if len(args) != 1 {
					return usagef("give one intent ID")
				}
				ws, err := resolveWorkspace(flagString(a, "source"))
				if err != nil {
					return err
				}
				if err := runIntentOp(ws, workflow.Request{Action: name, ID: args[0], Reason: flagString(a, "reason")}); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s is now %s\n", args[0], to)
				return nil
			},
		}
	}
	return &command{
		name: "intent", summary: "list, create and move intents through their lifecycle", usage: "SUBCOMMAND [flags]",
		help: `Intents move PENDING → IN_PROGRESS → COMPLETE → ARCHIVED; IN_PROGRESS ↔ BLOCKED;
any but ARCHIVED may be archived; nothing returns to PENDING.

Examples:
  intentfs intent list
  intentfs intent new INT-002 --name "Rate limiting" --scope "src/api/**" --criterion "go test ./..."
  intentfs intent start INT-002
  intentfs intent complete INT-002`,
		subcommands: []*command{
			intentListCmd(), intentShowCmd(), intentNewCmd(),
			transition("start", "move to IN_PROGRESS", "IN_PROGRESS"),
			transition("block", "move to BLOCKED", "BLOCKED"),
			transition("unblock", "move a BLOCKED intent back to IN_PROGRESS", "IN_PROGRESS"),
			intentCompleteCmd(),
			transition("archive", "move to ARCHIVED (final)", "ARCHIVED"),
			intentScopeCmd(),
		},
	}
}

func flagString(a *app, name string) string { v, _ := a.fs.GetString(name); return v }

func loadWorkspaceIntents(a *app) (cliWorkspace, *policy.Intents, error) {
	ws, err := resolveWorkspace(flagString(a, "source"))
	if err != nil {
		return ws, nil, err
	}
	w := &workflow.Workflow{Source: ws.source}
	in, err := w.Load()
	return ws, in, err
}

func intentListCmd() *command {
	return &command{
		name: "list", summary: "list the intents", usage: "",
		help:  "Lists every intent: id, status, version, name and scope.\n\nExamples:\n  intentfs intent list\n  intentfs intent list --json --source ./repo",
		flags: func(fs *pflag.FlagSet) { sourceFlag(fs); fs.Bool("json", false, "print JSON") },
		run: func(a *app, args []string) error {
			_, in, err := loadWorkspaceIntents(a)
			if err != nil {
				return err
			}
			if jsonOut(a) {
				return printJSON(a, intentsJSON(in.List))
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tVERSION\tNAME\tSCOPE")
			for _, it := range in.List {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", it.ID, it.Status, it.Version, it.Name, strings.Join(it.OwnedScope, ", "))
			}
			return tw.Flush()
		},
	}
}

type intentJSON struct {
	ID                 string               `json:"id"`
	Name               string               `json:"name"`
	Status             policy.Status        `json:"status"`
	Version            int                  `json:"version"`
	OwnedScope         []string             `json:"owned_scope"`
	Constraints        []string             `json:"constraints,omitempty"`
	AcceptanceCriteria []policy.Criterion   `json:"acceptance_criteria,omitempty"`
	RelatedSpecs       []policy.RelatedSpec `json:"related_specs,omitempty"`
	ParentIntent       string               `json:"parent_intent,omitempty"`
	Children           []string             `json:"children,omitempty"`
	Tags               []string             `json:"tags,omitempty"`
	CreatedAt          string               `json:"created_at,omitempty"`
	UpdatedAt          string               `json:"updated_at,omitempty"`
	AllowedNext        []policy.Status      `json:"allowed_transitions"`
}

func intentsJSON(list []*policy.Intent) []intentJSON {
	out := make([]intentJSON, 0, len(list))
	for _, it := range list {
		j := intentJSON{ID: it.ID, Name: it.Name, Status: it.Status, Version: it.Version, OwnedScope: it.OwnedScope,
			Constraints: it.Constraints, AcceptanceCriteria: it.AcceptanceCriteria, RelatedSpecs: it.RelatedSpecs,
			ParentIntent: it.ParentIntent, Tags: it.Tags, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
			AllowedNext: policy.AllowedTransitions(it.Status)}
		for _, o := range list {
			if o.ParentIntent == it.ID {
				j.Children = append(j.Children, o.ID)
			}
		}
		out = append(out, j)
	}
	return out
}

func intentShowCmd() *command {
	return &command{
		name: "show", summary: "show one intent and its place in the tree", usage: "ID",
		help:  "Shows an intent's fields, the transitions it may make, and the tree of its\nparents and children.\n\nExample:\n  intentfs intent show INT-001",
		flags: func(fs *pflag.FlagSet) { sourceFlag(fs); fs.Bool("json", false, "print JSON") },
		run: func(a *app, args []string) error {
			if len(args) != 1 {
				return usagef("give one intent ID")
			}
			_, in, err := loadWorkspaceIntents(a)
			if err != nil {
				return err
			}
			it := in.Get(args[0])
			if it == nil {
				return fmt.Errorf("unknown intent %q", args[0])
			}
			all := intentsJSON(in.List)
			var j intentJSON
			for _, x := range all {
				if x.ID == it.ID {
					j = x
				}
			}
			if jsonOut(a) {
				return printJSON(a, j)
			}
			w := a.stdout
			fmt.Fprintf(w, "%s: %s\nstatus:      %s (version %d)\nnext:        %v\nscope:       %s\n", it.ID, it.Name, it.Status, it.Version, j.AllowedNext, strings.Join(it.OwnedScope, ", "))
			for _, c := range it.Constraints {
				fmt.Fprintf(w, "constraint:  %s\n", c)
			}
			for _, c := range it.AcceptanceCriteria {
				if c.Check != "" {
					fmt.Fprintf(w, "criterion:   %s  [check: %s]\n", c.Text, c.Check)
				} else {
					fmt.Fprintf(w, "criterion:   %s\n", c.Text)
				}
			}
			for _, s := range it.RelatedSpecs {
				fmt.Fprintf(w, "spec:        %s %s\n", s.Type, s.Ref)
			}
			fmt.Fprintln(w, "\ntree:")
			root := it
			for root.ParentIntent != "" && in.Get(root.ParentIntent) != nil {
				root = in.Get(root.ParentIntent)
			}
			printTree(w, in, root, it.ID, "")
			return nil
		},
	}
}

func printTree(w interface{ Write([]byte) (int, error) }, in *policy.Intents, node *policy.Intent, mark, indent string) {
	here := "  "
	if node.ID == mark {
		here = "▶ "
	}
	fmt.Fprintf(w, "%s%s%s %s (%s)\n", indent, here, node.ID, node.Name, node.Status)
	for _, c := range in.List {
		if c.ParentIntent == node.ID {
			printTree(w, in, c, mark, indent+"    ")
		}
	}
}

func intentNewCmd() *command {
	return &command{
		name: "new", summary: "declare a new PENDING intent", usage: "ID --name NAME --scope GLOB...",
		help: `Appends a PENDING intent to the policy file, keeping the rest of the file as
it is. A child (--parent) must stay within its parent's scope.

Example:
  intentfs intent new INT-002 --name "Rate limiting" --scope "src/api/**" \
      --constraint "no new dependencies" --criterion "go test ./src/api/..." --parent INT-001`,
		flags: func(fs *pflag.FlagSet) {
			sourceFlag(fs)
			fs.String("name", "", "what the work is (3-200 characters)")
			fs.StringArray("scope", nil, "an owned_scope glob (repeatable)")
			fs.StringArray("constraint", nil, "a constraint (repeatable)")
			fs.StringArray("criterion", nil, "an acceptance criterion (repeatable)")
			fs.String("parent", "", "the parent intent")
		},
		run: func(a *app, args []string) error {
			if len(args) != 1 {
				return usagef("give one new intent ID")
			}
			scope, _ := a.fs.GetStringArray("scope")
			cons, _ := a.fs.GetStringArray("constraint")
			crit, _ := a.fs.GetStringArray("criterion")
			name := flagString(a, "name")
			if name == "" || len(scope) == 0 {
				return usagef("--name and at least one --scope are required")
			}
			ws, err := resolveWorkspace(flagString(a, "source"))
			if err != nil {
				return err
			}
			n := &policyedit.NewIntent{ID: args[0], Name: name, Scope: scope, Constraints: cons, AcceptanceCriteria: crit, Parent: flagString(a, "parent")}
			if err := runIntentOp(ws, workflow.Request{Action: "new", ID: n.ID, New: n}); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "created %s (PENDING); start it with: intentfs intent start %s\n", n.ID, n.ID)
			return nil
		},
	}
}

func intentScopeCmd() *command {
	return &command{
		name: "scope", summary: "add or remove owned_scope patterns", usage: "ID --add GLOB | --remove GLOB",
		help: `Changes an intent's owned_scope and bumps its version. A child's scope must
stay within its parent's; the error names the pattern that escapes.

Examples:
  intentfs intent scope INT-001 --add "docs/**"
  intentfs intent scope INT-001 --remove "docs/**"`,
		flags: func(fs *pflag.FlagSet) {
			sourceFlag(fs)
			fs.StringArray("add", nil, "a pattern to add (repeatable)")
			fs.StringArray("remove", nil, "a pattern to remove (repeatable)")
		},
		run: func(a *app, args []string) error {
			if len(args) != 1 {
				return usagef("give one intent ID")
			}
			add, _ := a.fs.GetStringArray("add")
			remove, _ := a.fs.GetStringArray("remove")
			ws, err := resolveWorkspace(flagString(a, "source"))
			if err != nil {
				return err
			}
			if err := runIntentOp(ws, workflow.Request{Action: "scope", ID: args[0], Add: add, Remove: remove}); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "scope of %s updated\n", args[0])
			return nil
		},
	}
}

func intentCompleteCmd() *command {
	return &command{
		name: "complete", summary: "run the acceptance checks and complete", usage: "ID [--force]",
		help: `Runs every acceptance check ({text, check} criteria) with sh -c inside the
mount and shows each result. The intent moves to COMPLETE only if all pass;
otherwise it stays IN_PROGRESS and each failure is recorded as a lesson. If
the source is not mounted, it is mounted for the checks in a temporary
directory (this needs FUSE). --force completes without running the checks
and says so in the ledger.

Each check runs as a sealed session pinned to the intent (see intentfs run),
as --user: by default the user who ran sudo, else the owner of the source,
never root unless --user root is given. No session's intent and not the
mount's changes, and the session does not take the intent from the agent
that holds it. Without root (no sessions can be made), checks run as the
calling user in a temporary mount of their own.

Examples:
  intentfs intent complete INT-001
  intentfs intent complete INT-001 --timeout 30m
  intentfs intent complete INT-001 --force      # no checks; the ledger says so
  sudo intentfs intent complete INT-001 --user agent
  sudo intentfs intent complete INT-001 --mount /workspace --user agent`,
		flags: func(fs *pflag.FlagSet) {
			sourceFlag(fs)
			fs.String("mount", "", "the mountpoint whose workspace holds the intent (instead of --source)")
			fs.Bool("force", false, "complete without running the checks")
			fs.Duration("timeout", 10*time.Minute, "time limit for each check")
			fs.Bool("json", false, "print the check results as JSON")
			fs.String("user", "", "the user the checks run as (default: the sudo user, else the owner of the source)")
			fs.String("lessons-file", workspace.DefaultLessonsFile, "the file in .orchestration/ that failed checks are recorded in as lessons, when the source is not mounted (a mount uses its own)")
		},
		run: runComplete,
	}
}

func runComplete(a *app, args []string) error {
	if len(args) != 1 {
		return usagef("give one intent ID")
	}
	id := args[0]
	force, _ := a.fs.GetBool("force")
	timeout, _ := a.fs.GetDuration("timeout")
	ws, in, err := loadCompleteWorkspace(a)
	if err != nil {
		return err
	}
	it := in.Get(id)
	if it == nil {
		return fmt.Errorf("unknown intent %q", id)
	}
	if force {
		if err := runIntentOp(ws, workflow.Request{Action: "complete", ID: id, Force: true}); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s is now COMPLETE (forced: checks not run)\n", id)
		return nil
	}
	if it.Status != policy.StatusInProgress {
		return fmt.Errorf("intent %s is %s; only an IN_PROGRESS intent can be completed", id, it.Status)
	}
	// Run the checks in a mount, each in a session pinned to the intent.
	entry, cleanup, err := mountForChecks(ws, id, flagString(a, "lessons-file"))
	if err != nil {
		return err
	}
	defer cleanup()
	command, err := checkCommand(entry, id, checkUser(entry, id, flagString(a, "user")), ws.source)
	if err != nil {
		return err
	}
	progress := func(i int, c policy.Criterion) {
		if isTerminal(a.stdout) {
			fmt.Fprintf(a.stdout, "[%d/%d] %s …\n", i+1, len(it.AcceptanceCriteria), c.Check)
		}
	}
	results := workflow.RunChecks(it.AcceptanceCriteria, entry.Mountpoint, timeout, command, progress)
	opErr := sendComplete(entry, workflow.Request{Action: "complete", ID: id, Results: results})
	if jsonOut(a) {
		if err := printJSON(a, map[string]any{"intent": id, "completed": opErr == nil, "results": results}); err != nil {
			return err
		}
		return opErr
	}
	for _, r := range results {
		switch {
		case r.Check == "":
			fmt.Fprintf(a.stdout, "  -     %s (no check: verify by hand)\n", r.Text)
		case r.Passed:
			fmt.Fprintf(a.stdout, "  PASS  %s  [%s, %.1fs]\n", r.Text, r.Check, r.Seconds)
		default:
			fmt.Fprintf(a.stdout, "  FAIL  %s  [%s, exit %d]\n", r.Text, r.Check, r.ExitCode)
			// The output is the agent's code's: escaped, so it cannot
			// move the cursor, rewrite a PASS line or reach the clipboard.
			for _, l := range strings.Split(strings.TrimRight(r.Output, "\n"), "\n") {
				fmt.Fprintf(a.stdout, "        | %s\n", textsafe.Escape(l))
			}
		}
	}
	if opErr != nil {
		return opErr
	}
	fmt.Fprintf(a.stdout, "%s is now COMPLETE\n", id)
	return nil
}

// loadCompleteWorkspace is the workspace intent complete works on: the
// source of the mount --mount names, else as the other intent commands
// find it (--source, the current directory).
func loadCompleteWorkspace(a *app) (cliWorkspace, *policy.Intents, error) {
	mnt := flagString(a, "mount")
	if mnt == "" {
		return loadWorkspaceIntents(a)
	}
	if flagString(a, "source") != "" {
		return cliWorkspace{}, nil, usagef("give --mount or --source, not both")
	}
	e, err := findMount(mnt)
	if err != nil {
		return cliWorkspace{}, nil, err
	}
	ws := cliWorkspace{source: e.Source, mount: &e}
	in, err := (&workflow.Workflow{Source: ws.source}).Load()
	return ws, in, err
}

// checkMount is where checks run: the workspace's mount, or one made for
// them.
type checkMount struct {
	mounts.Entry
	direct *daemon.Daemon // set for a temporary in-process mount
	// registryDir is where the mount registered, for intentfs run.
	registryDir string
}

func sendComplete(m checkMount, r workflow.Request) error {
	if m.direct != nil {
		return m.direct.IntentOp(r, cliProcess())
	}
	wr := intentRequestToWire(r)
	_, err := call(m.Entry, control.Request{Op: "intent", IntentOp: &wr})
	return err
}

// checkUser is whom the checks run as: --user if given; else the user of
// the agent session that holds the intent (the checks are its code); else
// "" (runner.ResolveUser's default).
func checkUser(m checkMount, id, user string) string {
	if user != "" || m.direct != nil {
		return user
	}
	resp, err := call(m.Entry, control.Request{Op: "sessions"})
	if err != nil {
		return ""
	}
	for _, s := range resp.Sessions {
		if s.Live && !s.Check && s.Intent == id {
			return strconv.FormatUint(uint64(s.Uid), 10)
		}
	}
	return ""
}

// checkCommand returns how each check runs: as root, in a session of the
// mount pinned to id (intentfs run --check), as user; without root, in a
// shell as the calling user, which only a temporary mount of the checks'
// own allows (its intent is id).
func checkCommand(m checkMount, id, user, source string) (workflow.CheckCommand, error) {
	if os.Geteuid() != 0 {
		if m.direct == nil {
			return nil, errors.New("acceptance checks of a live mount run as a sealed session, which needs root: run intent complete with sudo (or --force)")
		}
		return workflow.ShellIn, nil
	}
	u, err := runner.ResolveUser(user, source, "the acceptance checks", "intentfs intent complete")
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, check, dir string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, self, "run", "--mount", m.Mountpoint, "--intent", id, "--user", strconv.FormatUint(uint64(u.Uid), 10),
			"--check", "--name", "check "+id, "--", "sh", "-c", check)
		cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+m.registryDir)
		cmd.Dir = "/"
		return cmd
	}, nil
}

// mountForChecks finds the workspace's mount, or mounts the source in a
// temporary directory with id active. Neither's intent changes.
func mountForChecks(ws cliWorkspace, id, lessonsFile string) (checkMount, func(), error) {
	if ws.mount != nil {
		return checkMount{Entry: *ws.mount, registryDir: mounts.RuntimeDir()}, func() {}, nil
	}
	if err := fuseUsable(); err != nil {
		return checkMount{}, nil, fmt.Errorf("%w\n(the checks run inside a mount; use --force to complete without them)", err)
	}
	tmp, err := os.MkdirTemp("", "intentfs-checks-")
	if err != nil {
		return checkMount{}, nil, err
	}
	daemon.SetProcessUmask()
	d, err := daemon.Start(daemon.Config{Source: ws.source, Mountpoint: tmp, Intent: id, Version: version,
		Log: discardLogger(), Registry: mounts.Registry{Dir: tmp + ".run"}, OwnerUID: os.Getuid(), OwnerGID: os.Getgid(),
		LessonsFile: lessonsFile})
	if err != nil {
		os.Remove(tmp)
		return checkMount{}, nil, err
	}
	done := make(chan struct{})
	go func() { d.Wait(); d.Close(); close(done) }()
	cleanup := func() {
		d.Unmount()
		<-done
		os.Remove(tmp)
		os.RemoveAll(tmp + ".run")
	}
	return checkMount{Entry: mounts.Entry{Mountpoint: d.Mountpoint(), Source: ws.source}, direct: d, registryDir: tmp + ".run"}, cleanup, nil
}
