package gitgate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/intentfs/intentfs/internal/gitchange"
	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitlayout"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/policy"
)

// notesRef is the ref the daemon keeps the ledger's notes in.
const notesRef = "refs/notes/intentfs"

// maxLooseRefBytes bounds a loose ref read to compare its value.
const maxLooseRefBytes = 4096

// refOwners decides which refs a mount may not change: the notes ref,
// everywhere (the daemon writes it, past the mount); and in a linked
// worktree's mount every ref of the shared repository the worktree does
// not own: a branch another work tree has checked out, a tag, any notes.
// Those are judged by effect: a change that leaves a ref's value as it
// was (git pack-refs moving it from its loose file into packed-refs) is
// not refused.
type refOwners struct {
	g *Gate
	// holders is read once per decision, when a branch is first asked
	// about.
	holders map[string]gitlayout.Holder
	err     error
	read    bool
}

// worktree reports whether the mount is a linked worktree's.
func (o *refOwners) worktree() bool { return o.g.cfg.CommonDir != "" && o.g.cfg.CheckedOut != nil }

// why returns the reason the ref name may not change through this mount,
// or "" if it may.
func (o *refOwners) why(name string) string {
	switch {
	case name == notesRef || (o.worktree() && strings.HasPrefix(name, "refs/notes/")):
		return textsafe.Escape(name) + " carries the notes of the ledger, which only the intentfs daemon writes; it cannot be moved or deleted through a mount"
	case !o.worktree():
		return ""
	case strings.HasPrefix(name, "refs/tags/"):
		return textsafe.Escape(name) + " is a tag, shared by every work tree of the repository; a worktree's mount moves only its own branch and the branches it creates: make or move tags in the main work tree"
	case !strings.HasPrefix(name, "refs/heads/"):
		return ""
	}
	if !o.read {
		o.read = true
		o.holders, o.err = o.g.cfg.CheckedOut()
	}
	if o.err != nil {
		return fmt.Sprintf("cannot tell which work tree has %s checked out (%v); changing it is refused until it can be", textsafe.Escape(name), o.err)
	}
	h, ok := o.holders[name]
	switch {
	case !ok:
		return ""
	case h.IsMain:
		return fmt.Sprintf("%s is checked out in the main work tree %s; only that tree moves it", textsafe.Escape(name), textsafe.Escape(h.Tree))
	}
	return fmt.Sprintf("%s is checked out in the worktree %s; only that worktree's mount moves it", textsafe.Escape(name), textsafe.Escape(h.Tree))
}

// guardedRoots are the refs, reflogs and ref directories of the
// repository no rename may take away or replace, whatever the value.
func (o *refOwners) guardedRoots() []string {
	if o.worktree() {
		return []string{"refs/notes", "logs/refs/notes", "refs/tags"}
	}
	return []string{notesRef, "logs/" + notesRef}
}

// guarded reports whether inner is a guarded ref or reflog, lies below
// one, or is a directory above one.
func (o *refOwners) guarded(inner string) bool {
	for _, root := range o.guardedRoots() {
		if inner == root || strings.HasPrefix(inner, root+"/") || strings.HasPrefix(root, inner+"/") {
			return true
		}
	}
	return false
}

// reflogOf returns the ref whose reflog inner is ("logs/refs/notes/x").
func reflogOf(inner string) (string, bool) {
	name, ok := strings.CutPrefix(inner, "logs/")
	return name, ok && strings.HasPrefix(name, "refs/")
}

// ownedRefChange refuses a change, inside a git directory, to a ref the
// mount does not own (see refOwners): a rename onto it, its removal, a
// write in place, a rewrite of packed-refs that changes it, or any change
// to its reflog. It returns nil where the change is not such.
func (g *Gate) ownedRefChange(ctx context.Context, w gitchange.Change) *policy.Decision {
	req := w.Req
	dir1, in1, ok1 := policy.GitDirOf(req.Path)
	dir2, in2, ok2 := policy.GitDirOf(req.Path2)
	o := &refOwners{g: g}
	lock := func(in string) bool { return strings.HasSuffix(in, ".lock") }
	// reason says why the ref or reflog in may not change, "" if it may.
	reason := func(in string) string {
		if name, ok := reflogOf(in); ok && !lock(in) {
			if why := o.why(name); why != "" {
				return "the reflog " + textsafe.Escape(in) + " records the history of " + textsafe.Escape(name) + ": " + why
			}
			return ""
		}
		if strings.HasPrefix(in, "refs/") && !lock(in) {
			return o.why(in)
		}
		return ""
	}
	switch req.Op {
	case policy.OpRename:
		if ok1 && !lock(in1) && o.guarded(in1) {
			return refuse(req.Path, "moving "+textsafe.Escape(in1)+" away is refused: it holds refs this mount does not own (the notes, or in a worktree's mount the shared tags)")
		}
		if !ok2 || lock(in2) {
			return nil
		}
		if in2 == "packed-refs" {
			return g.packedOwnedChange(w, o, dir2)
		}
		if req.IsDir && o.guarded(in2) {
			return refuse(req.Path2, "moving a directory onto "+textsafe.Escape(in2)+" is refused: it holds refs this mount does not own")
		}
		why := reason(in2)
		if why == "" {
			return nil
		}
		if _, isLog := reflogOf(in2); isLog {
			// A reflog rewritten with every line it had (git gc's
			// reflog expire, when nothing is old enough to expire)
			// loses no history.
			if reflogKept(w, req.Path, req.Path2) {
				return nil
			}
		} else {
			// A rename that leaves the ref's value as it is moves
			// nothing; one that only adds notes to the notes ref is git
			// copying notes to rewritten commits (notes.rewriteRef).
			if b, err := w.Read(req.Path, maxLooseRefBytes); err == nil {
				now, known := currentRef(w, dir2, in2)
				switch {
				case known && string(trimRef(b)) == now:
					return nil
				case known && strings.HasPrefix(in2, "refs/notes/") && g.notesOnlyAdded(ctx, dir2, now, string(trimRef(b))):
					return nil
				}
			}
		}
		return refuse(req.Path2, why)
	case policy.OpUnlink:
		if !ok1 {
			return nil
		}
		why := reason(in1)
		if why == "" {
			return nil
		}
		if _, isLog := reflogOf(in1); !isLog {
			// Removing a loose ref that packed-refs holds at the same
			// value (what git pack-refs does) moves nothing.
			loose, err := w.Read(req.Path, maxLooseRefBytes)
			packed, known := packedRef(w, dir1, in1)
			if err == nil && known && packed != "" && string(trimRef(loose)) == packed {
				return nil
			}
		}
		return refuse(req.Path, "removing "+textsafe.Escape(in1)+" is refused: "+why)
	case policy.OpOpenWrite, policy.OpCreate:
		// git appends to a reflog when it updates the ref (the notes
		// ref, above, may gain notes); only the ref's own file is
		// refused in place.
		if _, isLog := reflogOf(in1); ok1 && !isLog {
			if why := reason(in1); why != "" {
				return refuse(req.Path, "writing "+textsafe.Escape(in1)+" in place is refused: "+why)
			}
		}
	case policy.OpLink:
		if ok2 {
			if why := reason(in2); why != "" {
				return refuse(req.Path, "making a hard link to "+textsafe.Escape(in2)+" is refused: "+why)
			}
		}
		fallthrough
	case policy.OpTruncate, policy.OpSymlink, policy.OpMknod,
		policy.OpFallocate, policy.OpCopyFileRange:
		if ok1 {
			if why := reason(in1); why != "" {
				return refuse(req.Path, "writing "+textsafe.Escape(in1)+" in place is refused: "+why)
			}
		}
	}
	return nil
}

// packedOwnedChange judges a rename onto packed-refs by its effect on
// the refs the mount does not own: each whose packed value changes and
// that has no loose file (which would keep its value) is refused.
func (g *Gate) packedOwnedChange(w gitchange.Change, o *refOwners, gitDir string) *policy.Decision {
	req := w.Req
	nb, err := w.Read(req.Path, maxRefBytes)
	if err != nil {
		return refuse(req.Path2, fmt.Sprintf("cannot read what would become packed-refs: %v", err))
	}
	newRefs, ok := parsePackedRefs(nb)
	if !ok {
		return nil // refused as a packed-refs that does not parse
	}
	oldRefs := map[string]string{}
	if ob, err := w.Read(path.Join(gitDir, "packed-refs"), maxRefBytes); err == nil {
		if oldRefs, ok = parsePackedRefs(ob); !ok {
			oldRefs = map[string]string{}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return refuse(req.Path2, fmt.Sprintf("cannot read packed-refs to tell what the rewrite changes: %v", err))
	}
	changed := map[string]bool{}
	for name, oid := range newRefs {
		if oldRefs[name] != oid {
			changed[name] = true
		}
	}
	for name := range oldRefs {
		if _, ok := newRefs[name]; !ok {
			changed[name] = true
		}
	}
	for name := range changed {
		why := o.why(name)
		if why == "" {
			continue
		}
		if _, err := w.Read(path.Join(gitDir, name), maxLooseRefBytes); err == nil {
			continue // its loose file holds its value
		}
		return refuse(req.Path2, "rewriting packed-refs so that "+textsafe.Escape(name)+" changes is refused: "+why)
	}
	return nil
}

// currentRef returns the value the ref inner holds now in gitDir, loose
// or packed ("" for none); known is false where it cannot be read.
func currentRef(w gitchange.Change, gitDir, inner string) (string, bool) {
	b, err := w.Read(path.Join(gitDir, inner), maxLooseRefBytes)
	switch {
	case err == nil:
		return string(trimRef(b)), true
	case !errors.Is(err, fs.ErrNotExist):
		return "", false
	}
	return packedRef(w, gitDir, inner)
}

// packedRef returns the value packed-refs gives the ref inner ("" for
// none); known is false where packed-refs cannot be read or parsed.
func packedRef(w gitchange.Change, gitDir, inner string) (string, bool) {
	b, err := w.Read(path.Join(gitDir, "packed-refs"), maxRefBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", true
	}
	if err != nil {
		return "", false
	}
	refs, ok := parsePackedRefs(b)
	return refs[inner], ok
}

// trimRef is a loose ref's value without its line end.
func trimRef(b []byte) []byte { return []byte(strings.TrimSpace(string(b))) }

// notesOnlyAdded reports whether moving a notes ref from old to new only
// adds notes: new descends from old, and no note of old is removed or
// changed. That is what git's copy of notes to rewritten commits does; a
// note removed or rewritten, or a history replaced, is refused.
func (g *Gate) notesOnlyAdded(ctx context.Context, gitDir, old, new string) bool {
	if !gitexec.ValidOID(old) || !gitexec.ValidOID(new) {
		return false
	}
	st := g.repo(ctx, gitDir)
	if st.git == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	if _, err := st.git.Output(ctx, "merge-base", "--is-ancestor", old, new); err != nil {
		return false
	}
	// Every path of the notes tree that is not an addition: a removed
	// or changed note (or a restructured fan-out, refused as well).
	out, err := st.git.Output(ctx, "diff-tree", "-r", "--no-renames", "--name-only", "--diff-filter=a", old, new)
	return err == nil && strings.TrimSpace(string(out)) == ""
}

// maxReflogBytes bounds the reflog the gate reads to compare a rewrite
// with what it replaces.
const maxReflogBytes = 16 << 20

// reflogKept reports whether the file at from, renamed onto the reflog
// at to, holds every line to holds now (a reflog that does not exist yet
// holds none). Unreadable, too large: not kept (fail closed).
func reflogKept(w gitchange.Change, from, to string) bool {
	now, err := w.Read(to, maxReflogBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	next, err := w.Read(from, maxReflogBytes)
	if err != nil {
		return false
	}
	have := map[string]int{}
	for _, l := range strings.SplitAfter(string(next), "\n") {
		have[l]++
	}
	for _, l := range strings.SplitAfter(string(now), "\n") {
		if l == "" {
			continue
		}
		if have[l] == 0 {
			return false
		}
		have[l]--
	}
	return true
}
