package fsnode

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/agent"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/policy"
)

// staleTarget returns why req, allowed so far, writes over a file that
// changed since a's session last read it, "" if it does not. The
// operations that replace or rewrite an existing file's content are
// checked: opening it for writing (or creating over it), truncating it,
// and renaming another file over it. A file the session never read, or is
// itself writing through an open handle, is not stale.
func (r *Root) staleTarget(req policy.Request, a Actor) string {
	var target string
	switch req.Op {
	case policy.OpOpenWrite, policy.OpCreate, policy.OpTruncate:
		target = req.Path
	case policy.OpRename:
		target = req.Path2
	default:
		return ""
	}
	if target == "" {
		return ""
	}
	var st unix.Stat_t
	if err := r.statBeneath(target, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "" // nothing there to overwrite, or not a file
	}
	was, stale := a.Versions.Stale(target, agent.VersionOf(&st))
	if !stale {
		return ""
	}
	return fmt.Sprintf("%s changed since this session last read it (then %d bytes, modified %s; now %d bytes, modified %s): another session or an edit outside the mount changed it; read it again, then redo the change",
		textsafe.Escape(target), was.Size, stamp(was.Mtime), st.Size, stamp(st.Mtim.Nano()))
}

func stamp(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// statBeneath stats rel in the source without following a symlink in any
// component.
func (r *Root) statBeneath(rel string, st *unix.Stat_t) error {
	fd, err := r.openBeneath(rel, unix.O_PATH, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fstat(fd, st)
}
