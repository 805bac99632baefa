package gitexec

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// OpenGitDir returns a Repo for the bare repository (or git directory)
// dir, such as a mirror intentfs keeps itself: commands run with
// --git-dir=dir in dir, so git never discovers another repository from the
// directory it runs in. When this process is root and dir belongs to
// another user, commands run as that user. dir must be a directory, not a
// symlink to one. HOME is /nonexistent: nothing in anyone's home
// directory takes part.
func OpenGitDir(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", dir, err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(abs, &st); err != nil {
		return nil, fmt.Errorf("opening git directory %s: %w", abs, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, fmt.Errorf("opening git directory %s: not a directory (a symlink is not followed)", abs)
	}
	r := &Repo{Dir: abs, home: "/nonexistent", gitDir: abs}
	if os.Geteuid() == 0 && st.Uid != 0 {
		r.cred = &syscall.Credential{Uid: st.Uid, Gid: st.Gid, Groups: []uint32{}}
	}
	return r, nil
}

// strictSSHBase is the start of StrictTransport's ssh command: no
// configuration file at all (-F none: neither the system's nor the user's
// ~/.ssh/config, which ssh finds through the password database, not
// $HOME, and which an agent running as that user can write), no prompt,
// and none of the options through which a configuration runs a program or
// reuses a connection someone else set up.
const strictSSHBase = "ssh -F none -o BatchMode=yes -o ProxyCommand=none -o ProxyJump=none -o PermitLocalCommand=no -o ControlMaster=no -o ControlPath=none -o ForwardAgent=no"

// SystemKnownHosts is the known_hosts file every strict fetch trusts: the
// system's, which only root writes.
const SystemKnownHosts = "/etc/ssh/ssh_known_hosts"

// StrictSSH returns the ssh command of StrictTransport: strictSSHBase,
// and host keys checked against known_hosts files the agent cannot
// write. ssh would otherwise read ~/.ssh/known_hosts of the user it runs
// as (the owner of .git, often the agent's uid), where the agent can add
// any key for the upstream's host. Only SystemKnownHosts and the file
// given to SetKnownHosts count; a host in neither is refused
// (StrictHostKeyChecking=yes), and nothing is written back
// (UpdateHostKeys=no).
func (r *Repo) StrictSSH() string {
	user := "/dev/null"
	if r.knownHosts != "" {
		user = r.knownHosts
	}
	return strictSSHBase + " -o StrictHostKeyChecking=yes -o UpdateHostKeys=no -o CheckHostIP=no" +
		" -o GlobalKnownHostsFile=" + SystemKnownHosts + " -o UserKnownHostsFile=" + user
}

// SetKnownHosts makes path, a known_hosts file the human controls, trusted
// by StrictTransport's ssh besides SystemKnownHosts. The path goes into a
// shell command line (GIT_SSH_COMMAND), so it is limited to characters
// that need no quoting; CheckKnownHosts says whether the agent can write it.
func (r *Repo) SetKnownHosts(path string) error {
	if path == "" {
		r.knownHosts = ""
		return nil
	}
	if !filepath.IsAbs(path) || strings.IndexFunc(path, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._+-", c))
	}) >= 0 {
		return fmt.Errorf("known_hosts file %q: use an absolute path of letters, digits and / . _ + - only", path)
	}
	r.knownHosts = path
	return nil
}

// strictOverrides are the -c overrides of StrictTransport beyond
// Transport's: the pinned ssh, every fetched object checked, and no
// submodule fetched.
func (r *Repo) strictOverrides() []string {
	return []string{
		"protocol.file.allow=always", "protocol.ssh.allow=always", "protocol.https.allow=always",
		"core.sshCommand=" + r.StrictSSH(),
		"ssh.variant=ssh",
		"transfer.fsckObjects=true",
		"fetch.fsckObjects=true",
		"fetch.recurseSubmodules=false",
		"submodule.recurse=false",
		"http.sslVerify=true",
	}
}

// StrictTransport returns a Transport command for a fetch intentfs makes
// on its own behalf, whose result it trusts: besides Transport's pinning,
// ssh reads no configuration file and trusts only host keys the agent
// cannot write (StrictSSH, in GIT_SSH_COMMAND and core.sshCommand both),
// HOME is /nonexistent (no ~/.gitconfig, ~/.netrc or XDG config), every
// object received is checked (transfer.fsckObjects), and submodules are
// never fetched.
func (r *Repo) StrictTransport(ctx context.Context, args ...string) *exec.Cmd {
	return r.command(ctx, r.strictOverrides(), []string{"HOME=/nonexistent", "GIT_SSH_COMMAND=" + r.StrictSSH()}, args)
}

// StrictTransportOutput runs a StrictTransport command and returns its
// combined stdout and stderr, at most maxOutput bytes of it.
func (r *Repo) StrictTransportOutput(ctx context.Context, args ...string) ([]byte, error) {
	cmd := r.StrictTransport(ctx, args...)
	out := &boundedBuffer{max: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), &Error{Args: args, Stderr: out.String(), Err: asOwner(cmd, err)}
	}
	return out.Bytes(), nil
}

// maxOutput bounds what StrictTransportOutput keeps of git's output (its
// progress and errors): a remote controls what git prints.
const maxOutput = 64 << 10

// boundedBuffer keeps the first max bytes written to it and drops the
// rest, without failing the writer (git would die of a broken pipe).
type boundedBuffer struct {
	b   strings.Builder
	max int
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	if room := w.max - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (w *boundedBuffer) Bytes() []byte  { return []byte(w.b.String()) }
func (w *boundedBuffer) String() string { return w.b.String() }
