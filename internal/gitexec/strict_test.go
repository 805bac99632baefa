package gitexec_test

import (
	"context"
	"os"
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
	for _, want := range []string{"core.sshCommand=" + gitexec.StrictSSH, "ssh.variant=ssh", "transfer.fsckObjects=true",
		"fetch.recurseSubmodules=false", "submodule.recurse=false", "protocol.allow=never", "protocol.ssh.allow=always",
		"core.hooksPath=/dev/null", "credential.helper="} {
		i := slices.Index(args, want)
		if i < 1 || args[i-1] != "-c" {
			t.Errorf("no -c %s in %q", want, args)
		}
	}
	if i := slices.Index(args, "fetch"); i < 0 || slices.Index(args, "core.sshCommand="+gitexec.StrictSSH) > i {
		t.Errorf("overrides must precede the subcommand: %q", args)
	}
	env := map[string][]string{}
	for _, kv := range cmd.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = append(env[k], v)
	}
	for k, want := range map[string]string{"HOME": "/nonexistent", "GIT_SSH_COMMAND": gitexec.StrictSSH, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"} {
		if got := env[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want exactly %q", k, got, want)
		}
	}
	for _, opt := range []string{"-F none", "BatchMode=yes", "ProxyCommand=none", "PermitLocalCommand=no", "ControlMaster=no", "ControlPath=none"} {
		if !strings.Contains(gitexec.StrictSSH, opt) {
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
