package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/accept"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/internal/workspace"
	"github.com/intentfs/intentfs/ledger"
)

func acceptCmd() *command {
	return &command{
		name: "accept", summary: "acknowledge a change made outside the mount as the human's", usage: "PATH... [--reason TEXT]",
		help: `Records in the ledger that each PATH is, as it is now, legitimate: a change
made in the source outside the mount (your own edit, a chown, a file a
tool such as "intentfs hook install" wrote) that verify would otherwise
report as changed, deleted or untraced forever. The accept record states
the path's current sha256, mode and owner (or that it is absent), who
accepted it (uid and user name) and why. Afterwards verify is green for
the path, blame credits the lines it accepted to you, and check takes a
commit of that content as accounted for.

Only a human may accept: it is refused from inside the mount (a shell
whose current directory is in it) and from any process of an agent
session (intentfs run). With the source mounted, the daemon records it,
so the ledger keeps one writer; otherwise this command writes the ledger
itself, holding the source's lock.

Examples:
  intentfs verify --source ./repo            # lists what changed outside the mount
  intentfs accept --source ./repo src/x.go --reason "my own fix"
  intentfs accept --mount /workspace .claude/settings.json --reason "hook install"
  intentfs accept --source ./repo old.txt     # a file deleted by hand: accepted as gone`,
		flags: func(fs *pflag.FlagSet) {
			sourceFlag(fs)
			fs.String("mount", "", "the mountpoint")
			fs.String("reason", "", "why the change is legitimate (kept in the record)")
			fs.Bool("json", false, "print each accepted path as JSON")
		},
		run: func(a *app, args []string) error {
			if len(args) == 0 {
				return usagef("name the paths to accept (intentfs verify lists what changed outside the mount)")
			}
			if err := refuseInsideMount(); err != nil {
				return err
			}
			retry := acceptRetry(args, flagString(a, "reason"))
			ws, err := workspaceFromFlags(a)
			if err != nil {
				return withSudoHint(err, retry)
			}
			if ws.mount == nil {
				if err := uncontrolledMountOf(ws.source); err != nil {
					return withSudoHint(err, retry)
				}
			}
			req := accept.Request{Paths: make([]string, len(args)), Reason: flagString(a, "reason")}
			for i, p := range args {
				req.Paths[i] = workspaceRel(ws, p)
			}
			if err := accept.Validate(req); err != nil {
				return usagef("%v", err)
			}
			res, err := acceptPaths(ws, req)
			if err != nil {
				return err
			}
			if jsonOut(a) {
				return printJSON(a, res)
			}
			for _, r := range res {
				if r.Hash == "" {
					fmt.Fprintf(a.stdout, "accepted %s as absent\n", textsafe.Escape(r.Path))
					continue
				}
				fmt.Fprintf(a.stdout, "accepted %s: %s, mode %s, owner %s\n", textsafe.Escape(r.Path), ledger.ShortHash(r.Hash), r.Mode, r.Owner)
			}
			return nil
		},
	}
}

// refuseInsideMount refuses a command only a human may run when it is run
// from inside an agent session or a mount: that is where an agent works.
// The daemon refuses such callers too; this says so before anything is
// read.
func refuseInsideMount() error {
	if id := os.Getenv("INTENTFS_SESSION"); id != "" {
		return fmt.Errorf("refused: this runs in the agent session %s; only a human outside every session may accept changes (run it from your own shell)", textsafe.Escape(id))
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil
	}
	found, err := mounts.IntentfsMounts()
	if err != nil {
		return nil
	}
	for _, m := range found {
		if cwd == m.Mountpoint || strings.HasPrefix(cwd, strings.TrimSuffix(m.Mountpoint, "/")+"/") {
			return fmt.Errorf("refused: the current directory %s is inside the mount %s, where agents work; cd out of it and run intentfs accept --mount %s with the paths", textsafe.Escape(cwd), textsafe.Escape(m.Mountpoint), textsafe.Escape(m.Mountpoint))
		}
	}
	return nil
}

// workspaceRel turns a path given on the command line into the
// workspace-relative name the ledger uses: an absolute path in the source
// or the mount is made relative to it; anything else is taken as
// relative to the workspace.
func workspaceRel(ws cliWorkspace, p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	for _, root := range []string{ws.source, mountOf(ws)} {
		if r, err := filepath.Rel(root, p); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
			return r
		}
	}
	return p
}

// acceptPaths records the acceptance through the mount's daemon, or, with
// no mount, in the ledger directly under the source's lock.
func acceptPaths(ws cliWorkspace, req accept.Request) ([]accept.Result, error) {
	if ws.mount != nil {
		wreq := control.AcceptRequest(req)
		resp, err := call(*ws.mount, control.Request{Op: "accept", Accept: &wreq})
		if err != nil {
			return nil, err
		}
		return acceptedFromWire(resp.Accepted), nil
	}
	if !hasLocalLedger(ws) {
		return nil, fmt.Errorf("%s has no ledger yet (it was never mounted): there is nothing for verify to hold against its files, so nothing to accept", ws.source)
	}
	by := cliProcess()
	who := accept.Who{Uid: by.Uid}
	if u, err := user.Current(); err == nil {
		who.Name = u.Username
	}
	var out []accept.Result
	err := offline(ws, "accept", "", func(s *workspace.Opened) error {
		now := time.Now()
		var changes []ledger.Change
		for _, p := range req.Paths {
			c, res, err := accept.Describe(ws.source, p, who, req.Reason, now)
			if err != nil {
				return err
			}
			c.Process = by
			changes = append(changes, c)
			out = append(out, res)
		}
		for _, c := range changes {
			s.Append(c)
		}
		return nil
	})
	if errors.Is(err, ledger.ErrAlreadyMounted) {
		return nil, fmt.Errorf("%w (if it is mounted, name the mount: intentfs accept --mount M)", err)
	}
	return out, err
}

// acceptRetry is the accept command line to suggest with sudo, {mount}
// standing for the mount flag.
func acceptRetry(paths []string, reason string) string {
	var b strings.Builder
	b.WriteString("accept {mount}")
	for _, p := range paths {
		b.WriteString(" " + shellWord(p))
	}
	if reason != "" {
		b.WriteString(" --reason " + shellWord(reason))
	}
	return b.String()
}

// shellWord quotes s for a shell when it holds anything but plain path
// characters, and escapes what a terminal would interpret.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(textsafe.Escape(s), "'", `'\''`) + "'"
}
