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

// StrictSSH is the ssh command of StrictTransport: no configuration file
// at all (-F none: neither the system's nor the user's ~/.ssh/config, which
// ssh finds through the password database, not $HOME, and which an agent
// running as that user can write), no prompt, and none of the options
// through which a configuration runs a program or reuses a connection
// someone else set up. Keys and known_hosts are still the default files
// of the user ssh runs as.
const StrictSSH = "ssh -F none -o BatchMode=yes -o ProxyCommand=none -o ProxyJump=none -o PermitLocalCommand=no -o ControlMaster=no -o ControlPath=none -o ForwardAgent=no"

// strictOverrides are the -c overrides of StrictTransport beyond
// Transport's: the pinned ssh, every fetched object checked, and no
// submodule fetched.
func strictOverrides() []string {
	return []string{
		"protocol.file.allow=always", "protocol.ssh.allow=always", "protocol.https.allow=always",
		"core.sshCommand=" + StrictSSH,
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
// ssh reads no configuration file (StrictSSH, in GIT_SSH_COMMAND and
// core.sshCommand both), HOME is /nonexistent (no ~/.gitconfig,
// ~/.netrc or XDG config), every object received is checked
// (transfer.fsckObjects), and submodules are never fetched.
func (r *Repo) StrictTransport(ctx context.Context, args ...string) *exec.Cmd {
	return r.command(ctx, strictOverrides(), []string{"HOME=/nonexistent", "GIT_SSH_COMMAND=" + StrictSSH}, args)
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
