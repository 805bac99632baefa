// Package gitexec runs the git binary on a repository that someone else
// (an agent) may have written, without letting that repository run code.
//
// intentfs reads commits, trees and blobs of the agent's repository, and
// writes notes to it. It does so with git itself rather than a Go
// reimplementation of git's object formats: git is already installed
// wherever a repository is, reads every object format, pack and index
// version that repository uses (a pure-Go library lags behind: SHA-256
// repositories, reftable, new pack features), and is what the reviewer
// trusts. The price is that git obeys the repository's own configuration,
// which can run programs: core.fsmonitor, core.hooksPath and hooks,
// filters and textconv drivers, log.showSignature (gpg.program),
// core.sshCommand, remote.*.uploadpack, credential helpers, and includes
// that pull in any of those. So every command here:
//
//   - passes -c overrides, which take precedence over every configuration
//     file and every include, for each key that names a program git would
//     run in the commands intentfs uses (see hardening);
//   - ignores the system and global configuration files
//     (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null), the system
//     attributes file, replace refs (--no-replace-objects), and any
//     GIT_* variable of the caller's environment: the environment is
//     built from scratch;
//   - reads blob bytes only with cat-file --batch, which applies no
//     filter and no textconv;
//   - refuses every transport (protocol.allow=never) except in Transport
//     commands, which allow file, ssh and https only and pin the programs
//     a transport runs;
//   - runs as the owner of the repository's git directory when intentfs
//     runs as root and the repository is someone else's, so git has no
//     more power than the agent that may have written it, and what git
//     writes (notes) belongs to that owner, not to root.
package gitexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// hardening returns the -c overrides every command runs with. Each one
// neutralises a configuration key through which a repository's config
// could make git run a program, or change what git reports.
func hardening() []string {
	return []string{
		"core.hooksPath=/dev/null", // no hooks (notes merge, gc --auto)
		"core.fsmonitor=false",     // the fsmonitor hook is a program
		"core.untrackedCache=false",
		"core.pager=cat",
		"core.editor=false",
		"core.askPass=",
		"core.sshCommand=ssh",
		"core.gitProxy=",
		"credential.helper=", // resets the list of helpers
		"log.showSignature=false",
		"gpg.program=false",
		"diff.external=",
		"log.showRoot=true",
		"gc.auto=0", // git commands that write objects may start gc
		"maintenance.auto=false",
		"protocol.allow=never",
		"safe.directory=", // git's ownership check stays as it is
		// The commit-graph file is a cache of each commit's tree and
		// parents that git trusts over the commit itself, and anyone
		// who can write the object store can write it.
		"core.commitGraph=false",
	}
}

// Repo is a git repository to run commands in.
type Repo struct {
	// Dir is the work tree (or the directory git is run in).
	Dir string
	// cred, if set, is who git runs as (the repository's owner).
	cred *syscall.Credential
	// home is the owner's home directory, for ssh in Transport commands.
	home string
	// gitDir, if set, is passed as --git-dir: the repository is a bare
	// one (OpenGitDir), never discovered from Dir.
	gitDir string
	// knownHosts, if set, is the known_hosts file of StrictTransport's
	// ssh besides the system's (SetKnownHosts).
	knownHosts string
}

// Open returns a Repo for the work tree at dir. When this process is root
// and dir's git directory belongs to another user, commands run as that
// user.
func Open(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", dir, err)
	}
	r := &Repo{Dir: abs, home: "/nonexistent"}
	var st syscall.Stat_t
	gitPath := filepath.Join(abs, ".git")
	if err := syscall.Lstat(gitPath, &st); err != nil {
		if err := syscall.Lstat(abs, &st); err != nil {
			return nil, fmt.Errorf("%s: %w", abs, err)
		}
	}
	if u, err := user.LookupId(fmt.Sprint(st.Uid)); err == nil && u.HomeDir != "" {
		r.home = u.HomeDir
	}
	if os.Geteuid() == 0 && st.Uid != 0 {
		// Groups: none. The owner's files are reachable as the owner.
		r.cred = &syscall.Credential{Uid: st.Uid, Gid: st.Gid, Groups: []uint32{}}
	}
	return r, nil
}

// RunsAs returns the uid git runs as.
func (r *Repo) RunsAs() int {
	if r.cred != nil {
		return int(r.cred.Uid)
	}
	return os.Geteuid()
}

// Command returns a hardened git command for args. The caller sets its
// stdin and stdout; stderr is collected for errors by Output and Run.
func (r *Repo) Command(ctx context.Context, args ...string) *exec.Cmd {
	return r.command(ctx, nil, nil, args)
}

// Transport returns a hardened git command that may reach a remote over
// file, ssh or https, as push and fetch need. The programs a transport
// could run from the repository's config (core.sshCommand, uploadpack,
// receivepack, credential helpers) stay pinned by the hardening; ssh runs
// with the owner's home directory (their keys and known_hosts).
func (r *Repo) Transport(ctx context.Context, args ...string) *exec.Cmd {
	allow := []string{"protocol.file.allow=always", "protocol.ssh.allow=always", "protocol.https.allow=always"}
	return r.command(ctx, allow, nil, args)
}

// command builds a hardened git command: extra are further -c overrides,
// env replaces the variables of the same name in the environment built
// here.
func (r *Repo) command(ctx context.Context, extra, env []string, args []string) *exec.Cmd {
	full := []string{"--no-pager", "--no-replace-objects"}
	if r.gitDir != "" {
		full = append(full, "--git-dir="+r.gitDir)
	}
	for _, h := range append(hardening(), extra...) {
		full = append(full, "-c", h)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = r.Dir
	cmd.Env = []string{
		"PATH=" + safePath(),
		"HOME=" + r.home,
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_ASKPASS=true",
		"SSH_ASKPASS=true",
		"GIT_SSH_COMMAND=ssh",
		// Notes commits need an identity, and the global config that
		// would hold the user's is not read.
		"GIT_AUTHOR_NAME=intentfs", "GIT_AUTHOR_EMAIL=intentfs@localhost",
		"GIT_COMMITTER_NAME=intentfs", "GIT_COMMITTER_EMAIL=intentfs@localhost",
	}
	cmd.Env = overrideEnv(cmd.Env, env)
	// git runs in a process group of its own, and the whole group is
	// killed when ctx ends: a helper git starts (upload-pack, ssh, a
	// pack-objects) that keeps git's pipes open must not keep the caller
	// waiting past its deadline (Wait gives up on the pipes WaitDelay
	// after the kill).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: r.cred}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	return cmd
}

// overrideEnv returns base with each NAME=value of over replacing base's
// NAME (or added).
func overrideEnv(base, over []string) []string {
	out := base
	for _, kv := range over {
		name, _, _ := strings.Cut(kv, "=")
		replaced := false
		for i, b := range out {
			if strings.HasPrefix(b, name+"=") {
				out[i], replaced = kv, true
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return out
}

// safePath is the PATH git runs with: the system directories only, so a
// directory the agent controls cannot supply a program git runs by name
// (ssh, gpg).
func safePath() string { return "/usr/local/bin:/usr/bin:/bin" }

// Error is a failed git command with what git printed on stderr.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Output runs git with args and returns its stdout.
func (r *Repo) Output(ctx context.Context, args ...string) ([]byte, error) {
	return r.OutputInput(ctx, nil, args...)
}

// OutputInput is Output with stdin.
func (r *Repo) OutputInput(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := r.Command(ctx, args...)
	return run(cmd, stdin, args)
}

// TransportOutput runs a Transport command and returns its combined
// stdout and stderr (git reports progress on stderr).
func (r *Repo) TransportOutput(ctx context.Context, args ...string) ([]byte, error) {
	cmd := r.Transport(ctx, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), &Error{Args: args, Stderr: out.String(), Err: err}
	}
	return out.Bytes(), nil
}

func run(cmd *exec.Cmd, stdin []byte, args []string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &Error{Args: args, Stderr: stderr.String(), Err: asOwner(cmd, err)}
	}
	return stdout.Bytes(), nil
}

// asOwner explains a failure to start git as the repository's owner: the
// owner must be able to reach the repository.
func asOwner(cmd *exec.Cmd, err error) error {
	var ee *exec.ExitError
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Credential == nil || errors.As(err, &ee) {
		return err
	}
	return fmt.Errorf("running git as the repository's owner (uid %d), who must be able to reach %s: %w", cmd.SysProcAttr.Credential.Uid, cmd.Dir, err)
}

// Line runs git and returns its stdout trimmed of the final newline.
func (r *Repo) Line(ctx context.Context, args ...string) (string, error) {
	out, err := r.Output(ctx, args...)
	return strings.TrimRight(string(out), "\n"), err
}

// Prefix returns the path of Dir below the work tree's top ("" at the
// top, else "sub/dir/"), so git's paths can be made relative to Dir.
func (r *Repo) Prefix(ctx context.Context) (string, error) {
	p, err := r.Line(ctx, "rev-parse", "--show-prefix")
	if err != nil {
		return "", fmt.Errorf("%s is not in a git work tree: %w", r.Dir, err)
	}
	return p, nil
}
