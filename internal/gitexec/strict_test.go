package gitexec_test

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitexec/gittest"
)

// TestStrictTransportCommand: the strict transport's ssh reads no
// configuration file and cannot be replaced by the repository's config or
// the caller's environment, HOME leads nowhere, and git checks what it
// receives and fetches no submodule.
func TestStrictTransportCommand(t *testing.T) {
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q", "--bare")
	t.Setenv("GIT_SSH_COMMAND", "touch /tmp/pwned")
	t.Setenv("HOME", dir)
	repo, err := gitexec.OpenGitDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := repo.StrictTransport(context.Background(), "fetch", "--end-of-options", "ssh://host/x.git")
	if cmd.Dir != dir {
		t.Errorf("runs in %s, want %s", cmd.Dir, dir)
	}
	args := cmd.Args[1:]
	if !slices.Contains(args, "--git-dir="+dir) {
		t.Errorf("no --git-dir in %q", args)
	}
	for _, want := range []string{"core.sshCommand=" + repo.StrictSSH(), "ssh.variant=ssh", "transfer.fsckObjects=true",
		"fetch.recurseSubmodules=false", "submodule.recurse=false", "protocol.allow=never", "protocol.ssh.allow=always",
		"core.hooksPath=/dev/null", "credential.helper="} {
		i := slices.Index(args, want)
		if i < 1 || args[i-1] != "-c" {
			t.Errorf("no -c %s in %q", want, args)
		}
	}
	if i := slices.Index(args, "fetch"); i < 0 || slices.Index(args, "core.sshCommand="+repo.StrictSSH()) > i {
		t.Errorf("overrides must precede the subcommand: %q", args)
	}
	env := map[string][]string{}
	for _, kv := range cmd.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = append(env[k], v)
	}
	for k, want := range map[string]string{"HOME": "/nonexistent", "GIT_SSH_COMMAND": repo.StrictSSH(), "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"} {
		if got := env[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want exactly %q", k, got, want)
		}
	}
	for _, opt := range []string{"-F none", "BatchMode=yes", "ProxyCommand=none", "PermitLocalCommand=no", "ControlMaster=no", "ControlPath=none",
		"StrictHostKeyChecking=yes", "UserKnownHostsFile=/dev/null", "GlobalKnownHostsFile=" + gitexec.SystemKnownHosts} {
		if !strings.Contains(repo.StrictSSH(), opt) {
			t.Errorf("StrictSSH lacks %s", opt)
		}
	}
}

// TestStrictTransportIgnoresRepositorySSH: a repository whose config names
// an ssh program, an upload-pack and a URL rewrite does not get them run
// by a strict fetch; the real ssh runs (and fails to connect).
func TestStrictTransportIgnoresRepositorySSH(t *testing.T) {
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q", "--bare")
	marker := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(t.TempDir(), "evil")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "config", "core.sshCommand", script)
	gittest.Git(t, dir, "config", "core.gitProxy", script)
	gittest.Git(t, dir, "config", "credential.helper", "!"+script)
	repo, err := gitexec.OpenGitDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := repo.StrictTransportOutput(context.Background(), "fetch", "--no-tags", "--end-of-options", "ssh://127.0.0.1:1/x.git", "+refs/heads/main:refs/x")
	if err == nil {
		t.Fatalf("a fetch from a closed port succeeded: %s", out)
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatal("the repository's configured program ran")
	}
	if !strings.Contains(string(out), "127.0.0.1") {
		t.Errorf("the error does not come from ssh connecting: %s", out)
	}
}

// TestStrictFetchAndOpenGitDir: a strict fetch from a local path works in
// a bare repository opened with OpenGitDir, which refuses a symlink or a
// file in place of the directory.
func TestStrictFetchAndOpenGitDir(t *testing.T) {
	up := t.TempDir()
	gittest.Init(t, up)
	head := gittest.Commit(t, up, "one", map[string]string{"a": "a\n"})
	mirror := filepath.Join(t.TempDir(), "m.git")
	gittest.Git(t, filepath.Dir(mirror), "init", "-q", "--bare", mirror)
	repo, err := gitexec.OpenGitDir(mirror)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if out, err := repo.StrictTransportOutput(ctx, "fetch", "--no-tags", "--end-of-options", up, "+refs/heads/main:refs/x"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, err := repo.Line(ctx, "rev-parse", "--verify", "refs/x"); err != nil || got != head {
		t.Fatalf("refs/x = %q %v, want %s", got, err, head)
	}
	link := filepath.Join(t.TempDir(), "link.git")
	if err := os.Symlink(mirror, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file.git")
	os.WriteFile(file, nil, 0o644)
	for _, p := range []string{link, file, filepath.Join(t.TempDir(), "absent")} {
		if _, err := gitexec.OpenGitDir(p); err == nil {
			t.Errorf("OpenGitDir(%s) accepted", p)
		}
	}
}

// TestStrictSSHIgnoresTheOwnersSSHFiles: ssh reads ~/.ssh of the user it
// runs as (the owner of .git, often the agent), found through the
// password database whatever HOME says. In a mount namespace whose home
// of root (this test's user) holds an agent's ~/.ssh/config with a
// ProxyCommand and its own known_hosts, a plain ssh runs the
// ProxyCommand, and the strict fetch neither runs it nor trusts that
// known_hosts: only the system's and the one given to SetKnownHosts, with
// unknown hosts refused.
func TestStrictSSHIgnoresTheOwnersSSHFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount over its home in a private mount namespace")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare")
	}
	u, err := user.LookupId("0")
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "proxy-ran")
	// The hostile home exists only in the namespace of each command.
	inAgentHome := func(env []string, args ...string) (string, error) {
		script := `mount -t tmpfs agent-home "$H" && mkdir -m 700 "$H/.ssh" &&
printf 'Host *\n  ProxyCommand touch %s\n' "$M" > "$H/.ssh/config" &&
echo '127.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAgent0wnedHostKeyAgent0wnedHostKeyAgent0wned' > "$H/.ssh/known_hosts" &&
exec "$@"`
		cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh"}, args...)...)
		cmd.Env = append(env, "H="+u.HomeDir, "M="+marker)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// The attack works against a plain ssh: the test can see it.
	if out, err := inAgentHome(os.Environ(), "ssh", "-o", "BatchMode=yes", "-p", "1", "127.0.0.1", "true"); err == nil {
		t.Fatalf("plain ssh through the ProxyCommand succeeded: %s", out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("a plain ssh did not run the planted ProxyCommand (%v): the test cannot tell", err)
	}
	os.Remove(marker)

	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q", "--bare")
	repo, err := gitexec.OpenGitDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	trusted := filepath.Join(t.TempDir(), "known_hosts")
	if err := repo.SetKnownHosts(trusted); err != nil {
		t.Fatal(err)
	}
	fetch := repo.StrictTransport(context.Background(), "ls-remote", "--end-of-options", "ssh://127.0.0.1:1/x.git")
	out, err := inAgentHome(fetch.Env, fetch.Args...)
	if err == nil {
		t.Fatalf("a fetch from a closed port succeeded: %s", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the strict fetch ran the agent's ProxyCommand: %s", out)
	}
	if !strings.Contains(out, "127.0.0.1") {
		t.Errorf("the error does not come from ssh connecting: %s", out)
	}
	// What ssh would use, as it resolves it with the same command line.
	sshArgs := append(strings.Fields(repo.StrictSSH()), "-G", "-p", "1", "127.0.0.1")
	cfg, err := inAgentHome(fetch.Env, sshArgs...)
	if err != nil {
		t.Fatalf("ssh -G: %v\n%s", err, cfg)
	}
	for _, want := range []string{"userknownhostsfile " + trusted + "\n", "globalknownhostsfile " + gitexec.SystemKnownHosts + "\n",
		"stricthostkeychecking true\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("ssh -G lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "proxycommand") || strings.Contains(cfg, "known_hosts ~") || strings.Contains(cfg, u.HomeDir+"/.ssh/known_hosts") {
		t.Errorf("ssh still reads the owner's known_hosts:\n%s", cfg)
	}
}

// TestSetKnownHostsRefusesShellText: the path goes into a shell command.
func TestSetKnownHostsRefusesShellText(t *testing.T) {
	repo, err := gitexec.OpenGitDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"relative/known_hosts", "/a b", "/x;touch /tmp/y", "/x$(id)", "/x'y"} {
		if err := repo.SetKnownHosts(p); err == nil {
			t.Errorf("SetKnownHosts(%q) accepted", p)
		}
	}
	if err := repo.SetKnownHosts("/etc/intentfs/known_hosts"); err != nil || !strings.HasSuffix(repo.StrictSSH(), "UserKnownHostsFile=/etc/intentfs/known_hosts") {
		t.Errorf("a plain path: %v, %s", err, repo.StrictSSH())
	}
}
