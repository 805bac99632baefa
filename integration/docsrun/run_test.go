package docsrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/integration/testenv"
)

// repl replaces text of a doc block before it runs: the doc's example
// paths and users by the test's. A replacement may name the shell
// variables every block runs with: $T (the page's directory, the current
// directory), $MNT (the mountpoint standing for /workspace), $BIN (on
// PATH first: intentfs, sudo), $MODULE (this checkout), $AGENT (the
// agent's user).
type repl struct{ from, to string }

// step is one thing a page scenario does: run the next marked block of
// the page (doc: a prefix of its first line, to keep scenario and page
// in step), after the test's own glue script, if any.
type step struct {
	glue    string // a shell script of the test, run before the block
	doc     string // "": a glue-only step
	subst   []repl // for this block, before the page's
	asAgent bool   // each command runs in an agent session in the mount
	asUID   bool   // each command runs as the agent's user, outside a session
	dir     string // the block runs there (relative to $T), where the doc's reader is
}

// page is the scenario of one markdown file.
type page struct {
	file   string
	policy string // what $EDITOR writes into the file it is given
	subst  []repl // for every block of the page
	// docT is the directory the page's printed paths start with where
	// the test's are in $T (e.g. /home/me): a transcript's output is
	// compared with $T replaced by it.
	docT  string
	steps []step
}

// plannedStep is a step with its block.
type plannedStep struct {
	step
	block *block
}

// plan pairs the steps with the page's marked blocks, in order.
func (p page) plan(marked []block) ([]plannedStep, error) {
	var out []plannedStep
	i := 0
	for _, s := range p.steps {
		ps := plannedStep{step: s}
		if s.doc != "" {
			if i == len(marked) {
				return nil, fmt.Errorf("the scenario runs a block starting %q, but the page has no further block marked run or transcript", s.doc)
			}
			if !strings.HasPrefix(marked[i].firstLine(), s.doc) {
				return nil, fmt.Errorf("%s: the scenario expects a block starting %q here, the page has %q", marked[i], s.doc, marked[i].firstLine())
			}
			ps.block = &marked[i]
			i++
		}
		out = append(out, ps)
	}
	if i < len(marked) {
		return nil, fmt.Errorf("%s: marked %s, but the page's scenario has no step for it", marked[i], marked[i].mark)
	}
	return out, nil
}

// world is one page's temporary machine: its directory, tools and agent.
type world struct {
	t    *testing.T
	vars map[string]string
	env  []string
}

// prelude goes before every script: the helpers a substitution
// may use.
const prelude = `set -e -o pipefail
# run_for SECONDS CMD...: a command that runs until stopped (watch, ui), stopped after SECONDS.
run_for() { local s=$1; shift; timeout "$s" "$@" || [ $? -eq 124 ]; }
# wait_record PATH EVENT: until the mount's ledger holds an EVENT record of
# PATH (a change is recorded once its file is released, after the writer
# has exited), at most 20 seconds.
wait_record() {
	for _ in $(seq 200); do
		[ -n "$(intentfs log --mount "$MNT" --path "$1" --event "$2" --json --limit 1)" ] && return 0
		sleep 0.1
	done
	echo "no $2 record of $1 after 20 s" >&2
	return 1
}
# as_agent CMD...: CMD as the agent's user, outside a session.
as_agent() { setpriv --reuid="$AGENT" --regid="$AGENT" --init-groups -- "$@"; }
# share_with_agent DIR: the checkout's owner is root, not the agent (the
# README's team setup); the agent writes through a group, as
# docs/doctor-and-permissions.md sets it up, and its git trusts the mount.
share_with_agent() {
	chown -R root:"$AGENT" "$1"
	chmod -R g+rwX "$1"
	find "$1" -type d -exec chmod g+s {} +
	setfacl -R -m g::rwX "$1"
	setfacl -R -d -m g::rwX "$1"
	runuser -u "$AGENT" -- sh -c 'cd && git config --global --get-all safe.directory | grep -qx "$1" || git config --global --add safe.directory "$1"' - "$MNT"
}
`

const sudoShim = `#!/bin/sh
# The test runs as root: sudo only runs its command.
exec "$@"
`

const editorShim = `#!/bin/sh
# $EDITOR of the docs: writes the page's policy into the file given.
cp "$T/policy.yaml" "$1"
`

func newWorld(t *testing.T, binary, agent string, p page) *world {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { unmountUnder(dir) })
	vars := map[string]string{
		"T":      dir,
		"MNT":    filepath.Join(dir, "workspace"),
		"BIN":    filepath.Join(dir, "bin"),
		"MODULE": moduleRoot(t),
		"AGENT":  agent,
	}
	for _, d := range []string{vars["BIN"], filepath.Join(dir, "home"), filepath.Join(dir, "run"), vars["MNT"]} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(dir, "policy.yaml"):         p.policy,
		filepath.Join(vars["BIN"], "sudo"):        sudoShim,
		filepath.Join(vars["BIN"], "edit-policy"): editorShim,
		filepath.Join(dir, "home", ".gitconfig"):  "[user]\n\tname = Docs Reader\n\temail = reader@example.com\n[safe]\n\tdirectory = *\n[init]\n\tdefaultBranch = main\n",
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(binary, filepath.Join(vars["BIN"], "intentfs")); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + vars["BIN"] + ":" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"),
		"EDITOR=" + filepath.Join(vars["BIN"], "edit-policy"),
		"INTENTFS_RUNTIME_DIR=" + filepath.Join(dir, "run"),
		"GIT_CONFIG_NOSYSTEM=1",
		"LANG=C.UTF-8",
		"TERM=dumb",
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	for _, k := range []string{"GOFLAGS", "GOTOOLCHAIN", "GOPROXY"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return &world{t: t, vars: vars, env: env}
}

// sh runs a script in the page's directory and returns its output,
// stdout and stderr together.
func (w *world) sh(script string) (string, error) { return w.shIn("", script) }

// shIn runs a script in dir, relative to the page's directory.
func (w *world) shIn(dir, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", prelude+script)
	cmd.Dir = filepath.Join(w.vars["T"], dir)
	cmd.Env = append(w.goEnv(), w.env...)
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after 90s: %w", ctx.Err())
	}
	return string(out), err
}

// goEnv is what go build needs of the test's environment when a block
// builds intentfs: the test's caches, not the page's empty $HOME.
func (w *world) goEnv() []string {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return nil
	}
	dirs := strings.Fields(string(out))
	if len(dirs) != 2 {
		return nil
	}
	return []string{"GOCACHE=" + dirs[0], "GOMODCACHE=" + dirs[1]}
}

// asDoc replaces the page's directory in a command's output by the one
// the doc shows.
func (w *world) asDoc(p page, out string) string {
	if p.docT == "" {
		return out
	}
	return strings.ReplaceAll(out, w.vars["T"], p.docT)
}

// wrap makes a command run as the step says: as root, as the agent in
// a session, or as the agent's user.
func (s step) wrap(cmd string) string {
	switch {
	case s.asAgent:
		return agentCommand(cmd)
	case s.asUID:
		return `as_agent bash -e -o pipefail -c ` + shellQuote(cmd)
	}
	return cmd
}

// agentCommand wraps a command so that it runs as the agent in a
// session of the page's mount, in the mount.
func agentCommand(cmd string) string {
	return `cd "$MNT" && intentfs run --mount "$MNT" --user "$AGENT" --select -- bash -e -o pipefail -c ` + shellQuote(cmd)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func substitute(text string, rs ...[]repl) string {
	for _, list := range rs {
		for _, r := range list {
			text = strings.ReplaceAll(text, r.from, r.to)
		}
	}
	return text
}

// runStep runs one planned step and fails the test with what the doc
// said and what happened.
func (w *world) runStep(p page, s plannedStep) {
	t := w.t
	if s.glue != "" {
		if out, err := w.sh(s.glue); err != nil {
			where := "the scenario's setup"
			if s.block != nil {
				where += " before " + s.block.String()
			}
			t.Fatalf("%s failed: %v\n%s\nscript:\n%s", where, err, out, s.glue)
		}
	}
	if s.block == nil {
		return
	}
	b := *s.block
	switch b.mark {
	case markRun:
		script := substitute(b.body, s.subst, p.subst)
		script = s.wrap(script)
		out, err := w.shIn(s.dir, script)
		if err != nil {
			t.Errorf("%s: the block fails: %v\n--- ran:\n%s\n--- output:\n%s", b, err, script, out)
		} else {
			t.Logf("%s: ran:\n%s\n--- output:\n%s", b, script, out)
		}
	case markTranscript:
		for _, c := range parseTranscript(b.body) {
			cmd := substitute(c.cmd, s.subst, p.subst)
			cmd = s.wrap(cmd)
			out, err := w.shIn(s.dir, cmd)
			switch {
			case c.want == nil && err != nil:
				t.Errorf("%s: $ %s fails: %v\n%s", b, c.cmd, err, out)
			case c.want != nil && !outputMatches(c.want, w.asDoc(p, out)):
				t.Errorf("%s: $ %s prints what the doc does not show (exit: %v)\n--- the doc:\n%s\n--- printed:\n%s", b, c.cmd, err, strings.Join(c.want, "\n"), out)
			default:
				t.Logf("%s: $ %s\n%s", b, cmd, out)
			}
		}
	}
}

// unmountUnder detaches every mount below dir, so that a failed page
// leaves nothing mounted behind.
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}

// whyNoFUSE says why this machine cannot run the pages ("" if it can).
func whyNoFUSE() string {
	if os.Geteuid() != 0 {
		return "not root: the pages mount, run agent sessions and act as root as the docs do with sudo"
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "/dev/fuse: " + err.Error()
	}
	for _, tool := range []string{"git", "bash", "jq", "setpriv", "timeout", "setfacl", "runuser"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "the docs' commands need " + tool + ": " + err.Error()
		}
	}
	return ""
}

// agentUser is the user standing for the docs' "agent": an unprivileged
// account of the machine, made for the test where there is none.
func agentUser(t *testing.T) string {
	t.Helper()
	const name = "intentfs-docs-agent"
	if _, err := user.Lookup(name); err == nil {
		return name
	}
	// A home of its own: the agent's git trusts the mount there
	// (safe.directory), as intentfs doctor asks of a checkout the agent
	// does not own.
	out, err := exec.Command("useradd", "--system", "--create-home", "--home-dir", "/var/lib/"+name, "--shell", "/bin/sh", name).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 9) { // 9: made meanwhile by a parallel run
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	return name
}

// TestDocPages runs every block of the docs marked run or transcript, a
// scenario per page, as root against real mounts.
func TestDocPages(t *testing.T) {
	// Serial: the pages mount and start agent sessions, whose mount namespaces copy every FUSE mount of the machine, other packages' tests' too.
	testenv.Serial(t)
	if why := whyNoFUSE(); why != "" {
		if os.Getenv("INTENTFS_REQUIRE_FUSE") == "1" {
			t.Fatalf("required (INTENTFS_REQUIRE_FUSE=1), but %s", why)
		}
		t.Skipf("skipping: %s (set INTENTFS_REQUIRE_FUSE=1 to make this a failure)", why)
	}
	binDir := t.TempDir()
	binary := filepath.Join(binDir, "intentfs")
	if out, err := exec.Command("go", "build", "-o", binary, filepath.Join(moduleRoot(t), "cmd", "intentfs")).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	agent := agentUser(t)
	blocks := allBlocks(t)
	for _, p := range docPages() {
		t.Run(strings.TrimSuffix(strings.ReplaceAll(p.file, "/", "_"), ".md"), func(t *testing.T) {
			var marked []block
			for _, b := range blocks[p.file] {
				if b.mark == markRun || b.mark == markTranscript {
					marked = append(marked, b)
				}
			}
			steps, err := p.plan(marked)
			if err != nil {
				t.Fatal(err)
			}
			w := newWorld(t, binary, agent, p)
			for _, s := range steps {
				w.runStep(p, s)
			}
		})
	}
}
