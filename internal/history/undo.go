// Reverting recorded changes: plan the inverse of each
// record, newest first, checks that every file is still as the ledger
// left it, and then restores pre-images from the object store, recreates
// deleted files, moves renamed ones back and removes created ones. Every
// path is resolved below the source without following symlinks, so a link
// planted in the tree cannot turn a revert into a write elsewhere.

package history

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/ledger"
)

// Step is one action of a revert.
type Step struct {
	Record string `json:"record"` // the record undone
	// Intent is the intent of the record undone: the revert of a change
	// is recorded under the intent that made it.
	Intent string `json:"intent,omitempty"`
	Event  string `json:"event"`
	Action string `json:"action"` // remove, restore, recreate, move-back, rmdir, mkdir, skip
	Path   string `json:"path"`
	To     string `json:"to,omitempty"`
	Hash   string `json:"hash,omitempty"`  // the content restored
	Moved  string `json:"moved,omitempty"` // the content a move-back carries
	// Mode is the mode a recreated file had when it was removed, as its
	// record says ("" when it does not).
	Mode     string `json:"mode,omitempty"`
	Conflict string `json:"conflict,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Plan is what a revert will do.
type Plan struct {
	Steps []Step `json:"steps"`
	// AlreadyReverted counts the changes left out because an earlier
	// revert undid them.
	AlreadyReverted int `json:"already_reverted,omitempty"`
}

// Conflicts lists the steps whose file changed since its record.
func (p *Plan) Conflicts() []Step {
	var out []Step
	for _, s := range p.Steps {
		if s.Conflict != "" {
			out = append(out, s)
		}
	}
	return out
}

// entry is the planner's view of one path.
type entry struct {
	exists bool
	dir    bool
	hash   string
}

// planner simulates the tree as steps apply, reading the disk lazily.
type planner struct {
	source string
	store  *objects.Store
	tree   map[string]*entry
}

func (p *planner) get(rel string) *entry {
	if e, ok := p.tree[rel]; ok {
		return e
	}
	e := &entry{}
	rootFd, err := syscall.Open(p.source, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err == nil {
		defer syscall.Close(rootFd)
		if fd, err := safeio.OpenBeneath(rootFd, rel, unix.O_PATH, 0); err == nil {
			var st syscall.Stat_t
			if syscall.Fstat(fd, &st) == nil {
				e.exists = true
				e.dir = st.Mode&syscall.S_IFMT == syscall.S_IFDIR
			}
			syscall.Close(fd)
		}
	}
	if e.exists && !e.dir {
		e.hash, _ = safeio.HashFile(p.source, rel)
	}
	p.tree[rel] = e
	return e
}

// buildUnits plans the revert of units (oldest first, as in the ledger):
// the steps run newest first. A file written under a temporary name and
// renamed into place is one unit, its net change.
func buildUnits(source string, store *objects.Store, units []unit) *Plan {
	pl := &planner{source: source, store: store, tree: map[string]*entry{}}
	plan := &Plan{}
	for i := len(units) - 1; i >= 0; i-- {
		u := units[i]
		if u.temp != "" {
			plan.Steps = append(plan.Steps, pl.replaceStep(u))
			continue
		}
		plan.Steps = append(plan.Steps, pl.step(u.rec))
	}
	return plan
}

// replaceStep undoes a file written as u.temp and renamed to its path:
// the path gets back what it held before (or goes, if it was new), and
// the temporary name, gone since the rename, stays gone.
func (p *planner) replaceStep(u unit) Step {
	g := u.rec.Gov()
	pre, post := ledger.Str(g.PreHash), ledger.Str(g.PostHash)
	s := Step{Record: u.rec.ID, Intent: ledger.Str(g.IntentID), Event: string(g.Event), Path: u.rec.Path()}
	cur := p.get(s.Path)
	switch {
	case !cur.exists:
		s.Conflict = "it no longer exists"
	case cur.hash != post:
		s.Conflict = fmt.Sprintf("it changed since the record (now %s, recorded %s)", ledger.ShortHash(cur.hash), ledger.ShortHash(post))
	}
	if g.PreHash == nil {
		s.Action = "remove"
		s.Note = fmt.Sprintf("net change of %d records: written as %s and renamed into place", u.n, u.temp)
		*cur = entry{}
	} else {
		s.Action, s.Hash = "restore", pre
		if s.Conflict == "" {
			s.Conflict = p.needBytes(pre)
		}
		s.Note = fmt.Sprintf("net change of %d records: rewritten through the temporary file %s", u.n, u.temp)
		*cur = entry{exists: true, hash: pre}
	}
	*p.get(u.temp) = entry{}
	return s
}

func (p *planner) needBytes(hash string) string {
	if hash == "" || hash == ledger.EmptyHash || p.store.Has(hash) {
		return ""
	}
	return "the bytes of " + hash + " are not in the object store (not kept, or collected)"
}

func (p *planner) step(r *ledger.Record) Step {
	g := r.Gov()
	pre, post := ledger.Str(g.PreHash), ledger.Str(g.PostHash)
	s := Step{Record: r.ID, Intent: ledger.Str(g.IntentID), Event: string(g.Event), Path: r.Path()}
	cur := p.get(s.Path)
	changed := func(want string) string {
		switch {
		case !cur.exists:
			return "it no longer exists"
		case cur.hash != want:
			return fmt.Sprintf("it changed since the record (now %s, recorded %s)", ledger.ShortHash(cur.hash), ledger.ShortHash(want))
		}
		return ""
	}
	switch g.Event {
	case ledger.EventCreate:
		s.Action = "remove"
		s.Conflict = changed(post)
		*cur = entry{}
	case ledger.EventWrite, ledger.EventTruncate:
		s.Action, s.Hash = "restore", pre
		if s.Conflict = changed(post); s.Conflict == "" {
			s.Conflict = p.needBytes(pre)
		}
		*cur = entry{exists: true, hash: pre}
	case ledger.EventDelete:
		s.Action, s.Hash, s.Mode = "recreate", pre, g.Mode
		if cur.exists {
			s.Conflict = "a file exists there again"
		} else {
			s.Conflict = p.needBytes(pre)
		}
		*cur = entry{exists: true, hash: pre}
	case ledger.EventRename:
		s.Action, s.To, s.Moved = "move-back", g.FromPath, post
		from := p.get(g.FromPath)
		switch {
		case post != "" && changed(post) != "":
			s.Conflict = changed(post)
		case !cur.exists:
			s.Conflict = "it no longer exists"
		case from.exists:
			s.Conflict = g.FromPath + " exists again"
		case pre != "":
			s.Hash = pre // the file the rename replaced comes back too
			s.Conflict = p.needBytes(pre)
		}
		*from = *cur
		if pre != "" {
			*cur = entry{exists: true, hash: pre}
		} else {
			*cur = entry{}
		}
	case ledger.EventMkdir:
		s.Action = "rmdir"
		*cur = entry{}
	case ledger.EventRmdir:
		s.Action = "mkdir"
		*cur = entry{exists: true, dir: true}
	case ledger.EventSymlink, ledger.EventLink, ledger.EventMknod:
		s.Action = "remove"
		if !cur.exists {
			s.Conflict = "it no longer exists"
		}
		*cur = entry{}
	default:
		s.Action = "skip"
		if ledger.ClassOf(g.Event) != "" {
			s.Note = "metadata changes (mode, owner, times, xattrs) are recorded without their old values and are not reverted"
		}
	}
	return s
}

// Apply carries out plan in the source, recording each undone step with
// rec. It stops at the first failure.
func Apply(source string, store *objects.Store, plan *Plan, rec func(ledger.Change)) (int, error) {
	rootFd, err := syscall.Open(source, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(rootFd)
	done := 0
	for _, s := range plan.Steps {
		if s.Action == "skip" {
			continue
		}
		if err := apply(rootFd, store, s); err != nil {
			return done, fmt.Errorf("reverting %s (%s of %s): %w", s.Record, s.Action, s.Path, err)
		}
		c := ledger.Change{Event: ledger.EventRevert, Path: s.Path, Reason: fmt.Sprintf("%s (undoing %s)", s.Action, s.Event), Time: time.Now()}
		switch s.Action {
		case "restore", "recreate":
			c.PostHash = s.Hash
		case "move-back":
			c.Path, c.FromPath, c.PostHash = s.To, s.Path, s.Moved
			rec(withRevert(c, s))
			if s.Hash != "" {
				rec(withRevert(ledger.Change{Event: ledger.EventRevert, Path: s.Path, PostHash: s.Hash, Reason: "recreate (the file the rename replaced)", Time: time.Now()}, s))
			}
			done++
			continue
		}
		rec(withRevert(c, s))
		done++
	}
	return done, nil
}

// withRevert marks c as undoing s's record, under s's intent.
func withRevert(c ledger.Change, s Step) ledger.Change {
	c.RevertOf, c.Intent = s.Record, s.Intent
	return c
}

// parent opens rel's directory below the root, never through a symlink.
func parent(rootFd int, rel string) (int, string, error) {
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	fd, err := safeio.OpenBeneath(rootFd, dir, unix.O_PATH|syscall.O_DIRECTORY, 0)
	return fd, name, err
}

func apply(rootFd int, store *objects.Store, s Step) error {
	dirfd, name, err := parent(rootFd, s.Path)
	if err != nil {
		return err
	}
	defer syscall.Close(dirfd)
	// A revert is a change too: what it overwrites or removes is kept, so
	// every version the ledger names keeps its bytes.
	if s.Action == "remove" || s.Action == "restore" {
		if err := keepExisting(dirfd, name, store); err != nil {
			return fmt.Errorf("keeping the current version first: %w", err)
		}
	}
	switch s.Action {
	case "remove":
		err := unix.Unlinkat(dirfd, name, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	case "rmdir":
		return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
	case "mkdir":
		return safeio.MkdirAt(dirfd, name, 0o755)
	case "restore", "recreate":
		return writeVersion(dirfd, name, store, s.Hash, recordedMode(s.Mode))
	case "move-back":
		todir, toname, err := parent(rootFd, s.To)
		if err != nil {
			return err
		}
		defer syscall.Close(todir)
		// The file the rename replaced comes back with the mode of the
		// file that replaced it: a save's copy takes the saved file's
		// mode (sed -i, editors), and nothing else records it.
		mode := os.FileMode(0o644)
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			mode = os.FileMode(st.Mode) & os.ModePerm
		}
		if err := unix.Renameat2(dirfd, name, todir, toname, unix.RENAME_NOREPLACE); err != nil {
			return err
		}
		if s.Hash != "" {
			return writeVersion(dirfd, name, store, s.Hash, mode)
		}
		return nil
	}
	return fmt.Errorf("unknown action %q", s.Action)
}

// keepExisting stores the regular file name in dirfd, if there is one.
func keepExisting(dirfd int, name string, store *objects.Store) error {
	fd, err := unix.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || err == syscall.ELOOP {
			return nil
		}
		return err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size == 0 {
		return err
	}
	hash, _, _, err := ledger.ContentHash(io.NewSectionReader(fdReader(fd), 0, st.Size))
	if err != nil {
		return err
	}
	return store.KeepFd(fd, hash)
}

// writeVersion puts the bytes of hash at name, atomically: a temporary
// file beside it, renamed over it; an existing file keeps its owner,
// group and mode, a new one takes its directory's owner and group, and
// mode.
func writeVersion(dirfd int, name string, store *objects.Store, hash string, mode os.FileMode) error {
	var data []byte
	if hash != ledger.EmptyHash && hash != "" {
		b, err := store.Read(hash)
		if err != nil {
			return err
		}
		data = b
	}
	// The owner, group and mode of the file replaced, else the
	// directory's owner and group: a revert run by root must not leave
	// the checkout's owner a file they cannot write.
	owner, err := safeio.OwnerAt(dirfd, name, mode)
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf(".%s.intentfs-revert-%d", name, time.Now().UnixNano())
	fd, err := unix.Openat(dirfd, tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = owner.Set(fd)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
	}
	return err
}

// recordedMode is the permission bits a record names ("0600"), 0644 when
// it names none.
func recordedMode(m string) os.FileMode {
	v, err := strconv.ParseUint(m, 8, 32)
	if m == "" || err != nil {
		return 0o644
	}
	return os.FileMode(v) & os.ModePerm
}

// fdReader reads a borrowed descriptor by offset, without taking ownership
// of it (an *os.File would close it when collected).
type fdReader int

func (fd fdReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := syscall.Pread(int(fd), p, off)
	if n == 0 && err == nil && len(p) > 0 {
		return 0, io.EOF
	}
	return n, err
}
