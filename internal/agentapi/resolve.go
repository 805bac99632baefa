package agentapi

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/intentfs/intentfs/internal/mounts"
)

// Target is a path an agent is about to change, as the mount sees it.
type Target struct {
	// Mountpoint is the intentfs mount the path is in.
	Mountpoint string
	// Rel is the workspace-relative path the kernel would hand the mount.
	Rel string
}

// Locator finds the intentfs mount that governs a path.
type Locator struct {
	// Mountpoints lists the intentfs mounts (nil: read them from
	// /proc/self/mountinfo).
	Mountpoints func() ([]string, error)
}

func (l Locator) mounts() ([]string, error) {
	if l.Mountpoints != nil {
		return l.Mountpoints()
	}
	ms, err := mounts.IntentfsMounts()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	return out, nil
}

// Locate resolves abs (an absolute path, existing or not) the way the
// kernel would for a write, symlinks included, and returns the mount that
// governs it. ok is false when no intentfs mount does, or when the path is
// the mount's own control directory.
func (l Locator) Locate(abs string) (t Target, ok bool, err error) {
	mounts, err := l.mounts()
	if err != nil {
		return Target{}, false, err
	}
	real := resolveExisting(filepath.Clean(abs))
	best := ""
	for _, m := range mounts {
		if (real == m || strings.HasPrefix(real, m+"/") || m == "/") && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return Target{}, false, nil
	}
	rel, err := filepath.Rel(best, real)
	if err != nil {
		return Target{}, false, err
	}
	if rel == ControlDirName || strings.HasPrefix(rel, ControlDirName+"/") {
		return Target{}, false, nil
	}
	return Target{Mountpoint: best, Rel: rel}, true, nil
}

// MountAt returns the intentfs mount containing dir (the deepest one).
func (l Locator) MountAt(dir string) (string, bool, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, err
	}
	t, ok, err := l.Locate(filepath.Join(abs, ".")) // a directory: itself
	if err != nil || !ok {
		// The mount root itself has Rel ".", which Locate accepts.
		return "", false, err
	}
	return t.Mountpoint, true, nil
}

// resolveExisting resolves the symlinks of the longest existing prefix of
// p and appends the rest: where a write to p would land.
func resolveExisting(p string) string {
	rest := ""
	cur := p
	for {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// exists reports whether p names something (a dangling symlink counts).
func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// ExistsIn reports whether rel names something under root.
func ExistsIn(root, rel string) bool { return exists(filepath.Join(root, rel)) }
