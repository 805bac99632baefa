package agent

import (
	"sync"

	"golang.org/x/sys/unix"
)

// Version identifies one version of a file cheaply: a change through any
// path, in the mount or in the source directly, changes its ctime, and a
// replacement changes its inode.
type Version struct {
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime int64 // nanoseconds
}

// VersionOf returns the version a stat describes.
func VersionOf(st *unix.Stat_t) Version {
	return Version{Dev: st.Dev, Ino: st.Ino, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
}

// maxVersions bounds the files a session remembers; past it the oldest
// is forgotten (a write to it is then not checked, as for a file the
// session never read).
const maxVersions = 1 << 16

// Versions remembers which version of each file a session last read or
// wrote: optimistic locking done at the filesystem, so that two agents
// need no lock protocol of their own. A write to a file that changed
// since is stale.
type Versions struct {
	mu   sync.Mutex
	seen map[string]Version
	// writing counts the session's own handles open for writing per
	// path: while it writes a file itself, the file changes under its
	// own hand, which is not stale.
	writing map[string]int
	order   []string // insertion order, for eviction
	head    int
}

func newVersions() *Versions { return &Versions{seen: map[string]Version{}, writing: map[string]int{}} }

// Opened counts a handle the session opened for writing on path.
func (vs *Versions) Opened(path string) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.writing[path]++
}

// Closed uncounts a handle Opened counted, and remembers version v (what
// the session itself left in the file), if v is not nil.
func (vs *Versions) Closed(path string, v *Version) {
	vs.mu.Lock()
	if n := vs.writing[path]; n <= 1 {
		delete(vs.writing, path)
	} else {
		vs.writing[path] = n - 1
	}
	vs.mu.Unlock()
	if v != nil {
		vs.Saw(path, *v)
	}
}

// Saw records that the session read, or itself produced, version v of
// path.
func (vs *Versions) Saw(path string, v Version) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if _, ok := vs.seen[path]; !ok {
		if len(vs.order)-vs.head >= maxVersions {
			delete(vs.seen, vs.order[vs.head])
			vs.order[vs.head] = ""
			vs.head++
			if vs.head > maxVersions {
				vs.order = append([]string(nil), vs.order[vs.head:]...)
				vs.head = 0
			}
		}
		vs.order = append(vs.order, path)
	}
	vs.seen[path] = v
}

// Forget drops path (it was removed by the session).
func (vs *Versions) Forget(path string) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	delete(vs.seen, path)
}

// Stale reports whether path, now at version cur, changed since the
// session last saw it, and the version it saw. A file it never saw is
// not stale.
func (vs *Versions) Stale(path string, cur Version) (Version, bool) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.writing[path] > 0 {
		return Version{}, false
	}
	was, ok := vs.seen[path]
	return was, ok && was != cur
}

// Len returns how many files are remembered.
func (vs *Versions) Len() int {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return len(vs.seen)
}
