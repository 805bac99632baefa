package ledger

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/intentfs/intentfs/internal/safeio"
)

// GitHead reads the revision HEAD points at straight from .git, without
// running git, and caches it until HEAD, the branch ref or packed-refs
// change on disk. These are git's work state, which an agent may write
// through the mount (a symlink to /dev/zero, a FIFO), so each is read with
// safeio.ReadFile: no symlinks, no blocking, bounded.
type GitHead struct {
	dir    string // the work tree
	gitDir string

	mu     sync.Mutex
	key    [3]int64
	cached string
}

// NewGitHead returns a reader for the work tree at dir.
func NewGitHead(dir string) *GitHead { return &GitHead{dir: dir, gitDir: filepath.Join(dir, ".git")} }

// Size limits for git's files: HEAD and a loose ref are one line; a
// packed-refs file of a large repository runs to megabytes.
const (
	maxRefBytes        = 4 << 10
	maxPackedRefsBytes = 64 << 20
)

// readGit reads rel below the git directory (see GitHead).
func (g *GitHead) readGit(rel string, max int64) ([]byte, error) {
	return safeio.ReadFile(g.dir, ".git/"+rel, max)
}

func mtimeKey(p string) int64 {
	var st syscall.Stat_t
	if syscall.Lstat(p, &st) != nil {
		return -1
	}
	return st.Mtim.Nano() ^ int64(st.Ino)<<1 ^ st.Size<<7
}

// Revision returns the commit sha of HEAD, or "" when dir is not a git work
// tree or HEAD has no commit yet.
func (g *GitHead) Revision() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	head, err := g.readGit("HEAD", maxRefBytes)
	if err != nil {
		return ""
	}
	line := strings.TrimSpace(string(head))
	ref, isRef := strings.CutPrefix(line, "ref: ")
	if !isRef {
		return line // detached HEAD
	}
	key := [3]int64{int64(len(line)), mtimeKey(filepath.Join(g.gitDir, ref)), mtimeKey(filepath.Join(g.gitDir, "packed-refs"))}
	if key == g.key && g.cached != "" {
		return g.cached
	}
	rev := g.resolve(ref)
	g.key, g.cached = key, rev
	return rev
}

func (g *GitHead) resolve(ref string) string {
	if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
		return ""
	}
	if b, err := g.readGit(ref, maxRefBytes); err == nil {
		return strings.TrimSpace(string(b))
	}
	packed, err := g.readGit("packed-refs", maxPackedRefsBytes)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(packed))
	for sc.Scan() {
		sha, name, ok := strings.Cut(sc.Text(), " ")
		if ok && name == ref {
			return sha
		}
	}
	return ""
}
