// Package runner starts an agent as a sealed session of a mount
// (`intentfs run`): a first process in new mount and pid namespaces hides
// the source directory and intentfs's runtime files, mounts a /proc of
// its own, checks that no other path leads to the source, and only then
// starts the agent's command as an unprivileged user with no_new_privs,
// in the mount. The daemon knows the session by its pid namespace, which
// no descendant can leave.
package runner

import "syscall"

// InitArg is the hidden first argument that makes intentfs the session's
// first process (see Init).
const InitArg = "__session-init"

// Config is what the session's first process is told, as JSON on fd 3.
type Config struct {
	// Mountpoint is the intentfs mount, Dir where the command starts
	// (inside it).
	Mountpoint string `json:"mountpoint"`
	Dir        string `json:"dir"`
	// Source is the directory the mount mirrors, which the session must
	// not reach; Hide lists more directories to hide (intentfs's runtime
	// and log directories), skipped where they do not exist.
	Source string   `json:"source"`
	Hide   []string `json:"hide,omitempty"`
	// Uid, Gid and Groups are the command's credentials.
	Uid    uint32   `json:"uid"`
	Gid    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
	// Umask, if set, is the command's umask (see SessionUmask); nil keeps
	// the one the first process inherited.
	Umask *uint32 `json:"umask,omitempty"`
	// ScratchSize bounds each of the session's private /tmp, /var/tmp
	// and /dev/shm (tmpfs's size=: bytes with k, m or g, or a percentage
	// of memory); "" is DefaultScratchSize.
	ScratchSize string `json:"scratch_size,omitempty"`
	// KeepTmp leaves the host's /tmp visible in the session instead of a
	// private one; BindTmp, if set, is a directory of the host bound at
	// the session's /tmp instead. /var/tmp and /dev/shm stay private.
	KeepTmp bool   `json:"keep_tmp,omitempty"`
	BindTmp string `json:"bind_tmp,omitempty"`
	// Env and Argv are the command's environment and arguments.
	Env  []string `json:"env"`
	Argv []string `json:"argv"`
}

// The first process's answers on fd 4.
const (
	msgSealed = "sealed"
	msgError  = "error: "
)

// exitCannotRun is the status of a session whose command never ran
// (the seal failed, or the daemon refused the session), as container
// runtimes use 125 for "the runtime failed".
const exitCannotRun = 125

// SessionUmask is the umask a session's command gets from the umask its
// starter had: that one, or 022 where it was 0. A daemon's umask is 0
// (see daemon.SetProcessUmask), and an agent that inherited it would
// leave world-writable files in the checkout.
func SessionUmask(starter uint32) *uint32 {
	m := starter & 0o777
	if m == 0 {
		m = 0o022
	}
	return &m
}

// CurrentUmask reads the process's umask (there is no call that only
// reads it; the process must not be creating files meanwhile).
func CurrentUmask() uint32 {
	old := syscall.Umask(0o022)
	syscall.Umask(old)
	return uint32(old)
}
