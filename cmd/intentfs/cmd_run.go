package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/runner"
)

// exitRunFailed is run's status when the command never ran.
const exitRunFailed = 125

func runCmd() *command {
	return &command{
		name: "run", summary: "run an agent as a sealed session of a mount", usage: "[--intent ID | --select] [--user USER] -- CMD [ARGS...]",
		help: `Runs CMD (default: a shell) as an agent session of a mount. The session is
sealed: CMD runs as USER with no_new_privs, in a private mount namespace in
which the source directory and intentfs's runtime files are hidden, and in a
pid namespace of its own that no process it starts can leave. Its working
directory is in the mount (the current directory, if that is in the mount).

The session has its own active intent. --intent ID pins it: the agent cannot
select another. --select (the default without --intent) lets the agent choose
by writing .intentfs/active, which then changes only this session. An
IN_PROGRESS intent is held by one session at a time unless the policy marks
it shared: true. Every record the session makes carries its id, user, and
--model and --conversation when given.

USER defaults to the user who ran sudo, else the owner of the source; root
only with an explicit --user root. run needs root to make the namespaces.
The session's /tmp is PRIVATE: /tmp, /var/tmp and /dev/shm are its own,
empty at the start, bounded (--tmp-size each, default 10% of memory) and
GONE when the session ends, along with everything the agent put there
(npm's and pip's caches, a tool installed under /tmp, scratch files). Files
the host keeps in /tmp are not visible inside either. --keep-tmp leaves
the host's /tmp visible to the session instead (the sockets and files of
the agent's user outside the session too: use it only for an agent user
of its own); --bind-tmp DIR makes the host directory DIR the session's
/tmp, so what the agent leaves there stays for the next session.
/var/tmp and /dev/shm stay private either way.
The work trees of the repository's linked worktrees (git worktree list)
are hidden like the source, and so are the sources of the other mounts in
the registry (other agents' workspaces). For a mount of a linked worktree
the repository's main work tree, its .git and the worktree's git
directory are hidden too: git reaches them through the mount's .git
(docs/worktrees.md). A source whose .git leads elsewhere in another way (a
symlink, a submodule's checkout) is refused.

The exit status is CMD's (125: the session could not be started).

Examples:
  sudo intentfs run --mount /workspace --user agent --intent INT-001 -- claude
  sudo intentfs run --select --user agent --name refactor -- bash
  sudo intentfs run --mount /workspace --user agent --intent INT-001 --bind-tmp /var/cache/agent-tmp -- claude
  sudo intentfs run --mount /workspace --user agent --intent INT-002 --model anthropic/claude-opus-4-5 \
      --conversation https://example.com/c/42 -- codex exec "fix the tests"`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint (default: the mount containing the current directory, or the only one)")
			fs.String("intent", "", "pin the session to this intent")
			fs.Bool("select", false, "let the agent select its intent through .intentfs/active (the default without --intent)")
			fs.String("user", "", "the user CMD runs as (name or uid)")
			fs.String("name", "", "a name for the session, shown by intentfs sessions")
			fs.String("model", "", "the model driving the agent; recorded as contributor.model_id")
			fs.String("conversation", "", "a URL of the agent's conversation; recorded as the conversation url")
			fs.String("tmp-size", runner.DefaultScratchSize, "the size of each of the session's /tmp, /var/tmp and /dev/shm (512m, 2g, or a percentage of memory)")
			fs.Bool("keep-tmp", false, "keep the host's /tmp visible in the session instead of a private, empty one")
			fs.String("bind-tmp", "", "bind the host directory `DIR` at the session's /tmp (kept after the session) instead of a private, empty one")
			fs.Bool("check", false, "run acceptance checks: the session takes no claim on its intent (intentfs intent complete uses this)")
			_ = fs.MarkHidden("check")
		},
		run:        runRun,
		stopAtArgs: true,
	}
}

func runRun(a *app, args []string) error {
	intent, sel := flagString(a, "intent"), false
	sel, _ = a.fs.GetBool("select")
	if intent != "" && sel {
		return usagef("give --intent ID (pinned) or --select (the agent chooses), not both")
	}
	if len(args) == 0 {
		shell := os.Getenv("SHELL")
		if shell == "" {
			shell = "/bin/sh"
		}
		args = []string{shell}
	}
	e, err := findMount(flagString(a, "mount"))
	if err != nil {
		return err
	}
	u, err := runner.ResolveUser(flagString(a, "user"), e.Source, "the agent", "intentfs run")
	if err != nil {
		return err
	}
	if resp, err := call(e, control.Request{Op: "status"}); err == nil {
		if err := checkSigningKeysHidden(e, resp.Status, u.Uid); err != nil {
			return err
		}
	}
	if err := runner.CheckAncestors(e.Source, u); err != nil {
		fmt.Fprintf(a.stderr, "intentfs run: %v\n", err)
		return exitCode(exitRunFailed)
	}
	covers, err := sessionCovers(e, u)
	if err != nil {
		fmt.Fprintf(a.stderr, "intentfs run: %v\n", err)
		return exitCode(exitRunFailed)
	}
	dir := e.Mountpoint
	if cwd, err := os.Getwd(); err == nil && (cwd == e.Mountpoint || strings.HasPrefix(cwd, e.Mountpoint+"/")) {
		dir = cwd
	}
	if err := checkAttribution(flagString(a, "model"), flagString(a, "conversation")); err != nil {
		return err
	}
	if err := runner.CheckScratchSize(flagString(a, "tmp-size")); err != nil {
		return usagef("--tmp-size: %v", err)
	}
	keepTmp, _ := a.fs.GetBool("keep-tmp")
	bindTmp, err := sessionTmpDir(flagString(a, "bind-tmp"), keepTmp, e.Source, hiddenRuntimeDirs(e))
	if err != nil {
		return err
	}
	check, _ := a.fs.GetBool("check")
	if check && intent == "" {
		return usagef("--check needs --intent")
	}
	spec := agent.Spec{Name: flagString(a, "name"), User: u.Name, Uid: u.Uid, Gid: u.Gid, Intent: intent,
		Pinned: intent != "", Model: flagString(a, "model"), Conversation: flagString(a, "conversation"), Check: check}
	code, err := runner.Launch(runner.Options{
		Config: runner.Config{Mountpoint: e.Mountpoint, Dir: dir, Source: e.Source, Hide: append(hiddenRuntimeDirs(e), covers...),
			Uid: u.Uid, Gid: u.Gid, Groups: u.Groups, Env: runner.Environment(os.Environ(), u, dir, e.Mountpoint), Argv: args,
			Umask: runner.SessionUmask(runner.CurrentUmask()), ScratchSize: flagString(a, "tmp-size"), KeepTmp: keepTmp, BindTmp: bindTmp},
		Register: registerWith(e, spec),
	})
	if err != nil {
		fmt.Fprintf(a.stderr, "intentfs run: %v\n", err)
		return exitCode(exitRunFailed)
	}
	return exitCode(code)
}

// sessionTmpDir checks --bind-tmp: an existing directory, named by its
// resolved path, that neither is nor holds the source or a directory the
// session must not see, and is not inside the source.
func sessionTmpDir(dir string, keepTmp bool, source string, hidden []string) (string, error) {
	if dir == "" {
		return "", nil
	}
	if keepTmp {
		return "", usagef("give --keep-tmp or --bind-tmp DIR, not both")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", usagef("--bind-tmp %s: %v", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", usagef("--bind-tmp %s: %v (create the directory first, owned by the agent's user)", dir, err)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return "", usagef("--bind-tmp %s is not a directory", dir)
	}
	within := func(p, d string) bool { return p == d || d == "/" || strings.HasPrefix(p, d+"/") }
	if within(real, source) || within(source, real) {
		return "", usagef("--bind-tmp %s: the session's /tmp may not be the source %s, inside it, or hold it", dir, source)
	}
	for _, h := range hidden {
		if within(h, real) {
			return "", usagef("--bind-tmp %s holds %s, which a session must not see; name a directory of its own", dir, h)
		}
	}
	return real, nil
}

// maxModelID is Agent Trace's bound on contributor.model_id.
const maxModelID = 250

// checkAttribution refuses a --model or --conversation that would make
// records the Agent Trace schema rejects.
func checkAttribution(model, conversation string) error {
	if len(model) > maxModelID || strings.ContainsFunc(model, unicode.IsControl) {
		return usagef("--model must be at most %d characters with no control characters, like anthropic/claude-opus-4-5", maxModelID)
	}
	if conversation == "" {
		return nil
	}
	u, err := url.Parse(conversation)
	if err != nil || u.Scheme == "" || (u.Host == "" && u.Opaque == "") || strings.ContainsFunc(conversation, unicode.IsSpace) {
		return usagef("--conversation must be an absolute URL such as https://example.com/c/42, not %q", conversation)
	}
	return nil
}

// registerWith returns the Register step of a session of the mount e.
func registerWith(e mounts.Entry, spec agent.Spec) func(int) (string, error) {
	return func(pid int) (string, error) {
		spec.RootPid = pid
		wspec := control.SessionSpec(spec)
		resp, err := call(e, control.Request{Op: "session_start", Session: &wspec})
		if err != nil {
			return "", err
		}
		if resp.Session == nil {
			return "", errors.New("the daemon did not describe the session it started")
		}
		return resp.Session.ID, nil
	}
}

// hiddenRuntimeDirs are intentfs's directories a session must not see:
// where the mount registers (its control socket) and logs, and the
// system-wide runtime directory.
func hiddenRuntimeDirs(e mounts.Entry) []string {
	dirs := []string{"/run/intentfs", mounts.RuntimeDir()}
	for _, p := range []string{e.Socket, e.Log} {
		if p != "" {
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	return dirs
}

// sessionCovers are the directories besides the source that a session of
// the mount e hides: the repository's other work trees and the sources of
// the other mounts in the registry (other agents' workspaces).
func sessionCovers(e mounts.Entry, u runner.User) ([]string, error) {
	covers, err := runner.RepositoryCovers(e.Source, e.Mountpoint, u)
	if err != nil {
		return nil, err
	}
	entries, err := mounts.DefaultRegistry().List()
	if err != nil {
		return nil, fmt.Errorf("listing the other mounts, whose sources a session must not reach: %w", err)
	}
	var others []string
	for _, o := range entries {
		if o.Mountpoint != e.Mountpoint {
			others = append(others, o.Source)
		}
	}
	more, err := runner.OtherSourceCovers(others, e.Source, e.Mountpoint)
	return append(covers, more...), err
}

// exitCode makes a command return a given exit status without printing.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
