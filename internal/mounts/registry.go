// Package mounts is where running mounts register, so the CLI can find
// a mount's control socket and log from its mountpoint or the current
// directory.
package mounts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Entry is a running mount as registered for the CLI.
type Entry struct {
	Mountpoint string    `json:"mountpoint"`
	Source     string    `json:"source"`
	Pid        int       `json:"pid"`
	Socket     string    `json:"socket"`
	Log        string    `json:"log,omitempty"`
	StartedAt  time.Time `json:"started_at"`
}

// RuntimeDir is where mounts register: $INTENTFS_RUNTIME_DIR, else
// $XDG_RUNTIME_DIR/intentfs, else /run/intentfs for root, else
// /tmp/intentfs-UID.
func RuntimeDir() string {
	if d := os.Getenv("INTENTFS_RUNTIME_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "intentfs")
	}
	if os.Geteuid() == 0 {
		return "/run/intentfs"
	}
	return fmt.Sprintf("/tmp/intentfs-%d", os.Geteuid())
}

// Registry is a directory of Entry files.
type Registry struct{ Dir string }

// DefaultRegistry is the registry at RuntimeDir.
func DefaultRegistry() Registry { return Registry{Dir: RuntimeDir()} }

// idFor names a mountpoint's files in the registry.
func idFor(mountpoint string) string {
	h := sha256.Sum256([]byte(mountpoint))
	return hex.EncodeToString(h[:8])
}

// Paths returns the entry, socket and log paths for a mountpoint.
func (r Registry) Paths(mountpoint string) (entry, socket, log string) {
	id := idFor(mountpoint)
	return filepath.Join(r.Dir, id+".json"), filepath.Join(r.Dir, id+".sock"), filepath.Join(r.Dir, id+".log")
}

// Ensure creates the registry directory, private to its owner.
func (r Registry) Ensure() error {
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return fmt.Errorf("creating runtime directory %s: %w", r.Dir, err)
	}
	return nil
}

// Register writes e atomically.
func (r Registry) Register(e Entry) error {
	if err := r.Ensure(); err != nil {
		return err
	}
	path, _, _ := r.Paths(e.Mountpoint)
	b, _ := json.MarshalIndent(e, "", "  ")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("registering mount: %w", err)
	}
	return os.Rename(tmp, path)
}

// Unregister removes a mount's entry and socket.
func (r Registry) Unregister(mountpoint string) {
	entry, sock, _ := r.Paths(mountpoint)
	os.Remove(entry)
	os.Remove(sock)
}

// List returns the live mounts, dropping entries whose daemon is gone.
func (r Registry) List() ([]Entry, error) {
	files, err := filepath.Glob(filepath.Join(r.Dir, "*.json"))
	if err != nil {
		return nil, err
	}
	mounted := mountedFuse()
	var out []Entry
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var e Entry
		if json.Unmarshal(b, &e) != nil {
			continue
		}
		if !alive(e.Pid) || (mounted != nil && !mounted[e.Mountpoint]) {
			os.Remove(f) // stale: the daemon died without cleaning up
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Mountpoint < out[j].Mountpoint })
	return out, nil
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// mountedFuse returns the FUSE mountpoints of this mount namespace, or nil
// if they cannot be read.
func mountedFuse() map[string]bool {
	mounts, err := KernelMounts()
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, m := range mounts {
		if strings.HasPrefix(m.FSType, "fuse") {
			out[m.Mountpoint] = true
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ErrNoMount is returned by Find when no mount matches.
var ErrNoMount = errors.New("no intentfs mount is running")

// Find picks the mount a command means: the one at mountpoint if given,
// else the one containing cwd, else the only one running.
func (r Registry) Find(mountpoint, cwd string) (Entry, error) {
	list, err := r.List()
	if err != nil {
		return Entry{}, err
	}
	return r.findIn(list, mountpoint, cwd)
}

func (r Registry) findIn(list []Entry, mountpoint, cwd string) (Entry, error) {
	if mountpoint != "" {
		abs, err := filepath.Abs(mountpoint)
		if err != nil {
			return Entry{}, err
		}
		for _, e := range list {
			if e.Mountpoint == abs {
				return e, nil
			}
		}
		return Entry{}, fmt.Errorf("%s is not an intentfs mount%s", abs, describe(list))
	}
	for _, e := range list {
		if cwd == e.Mountpoint || strings.HasPrefix(cwd, e.Mountpoint+"/") {
			return e, nil
		}
	}
	switch len(list) {
	case 0:
		return Entry{}, fmt.Errorf("%w (start one with `intentfs mount SOURCE MOUNTPOINT`)", ErrNoMount)
	case 1:
		return list[0], nil
	}
	return Entry{}, fmt.Errorf("several mounts are running; name one with --mount%s", describe(list))
}

func describe(list []Entry) string {
	if len(list) == 0 {
		return " (no mount is running)"
	}
	var b strings.Builder
	b.WriteString("; running mounts:")
	for _, e := range list {
		fmt.Fprintf(&b, "\n  %s (source %s, pid %d)", e.Mountpoint, e.Source, e.Pid)
	}
	return b.String()
}
