// Package accept turns a human's acknowledgement of a path's current
// state (intentfs accept) into a ledger change: the content, mode and
// owner the path has now, who accepted it and why.
package accept

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// MaxReasonBytes bounds the reason a record carries.
const MaxReasonBytes = 1024

// MaxPaths bounds the paths one command accepts.
const MaxPaths = 1000

// Request is what a human accepts.
type Request struct {
	// Paths are workspace-relative.
	Paths  []string `json:"paths"`
	Reason string   `json:"reason,omitempty"`
}

// Result is one accepted path, as recorded.
type Result struct {
	Path string `json:"path"`
	// Hash is the content accepted, "" for a path accepted as absent.
	Hash  string `json:"hash,omitempty"`
	Mode  string `json:"mode,omitempty"`
	Owner string `json:"owner,omitempty"`
}

// Who names the human who accepts: the uid the kernel vouches for and
// that uid's user name.
type Who struct {
	Uid  uint32
	Name string
}

func (w Who) String() string {
	if w.Name == "" {
		return fmt.Sprintf("uid %d", w.Uid)
	}
	return fmt.Sprintf("%s (uid %d)", textsafe.Escape(w.Name), w.Uid)
}

// Validate checks a request before anything is read: paths that name a
// file in the workspace, at most MaxPaths of them, and a bounded reason.
func Validate(r Request) error {
	switch {
	case len(r.Paths) == 0:
		return errors.New("name at least one path to accept")
	case len(r.Paths) > MaxPaths:
		return fmt.Errorf("%d paths named; accept at most %d at a time", len(r.Paths), MaxPaths)
	case len(r.Reason) > MaxReasonBytes:
		return fmt.Errorf("the reason is %d bytes; keep it under %d", len(r.Reason), MaxReasonBytes)
	}
	for _, p := range r.Paths {
		if _, err := Clean(p); err != nil {
			return err
		}
	}
	return nil
}

// Clean returns rel as the ledger names it, or why it names nothing the
// ledger governs.
func Clean(rel string) (string, error) {
	c := path.Clean(strings.TrimPrefix(rel, "./"))
	switch {
	case rel == "" || c == ".":
		return "", errors.New("accept a file, not the workspace itself: name the files (intentfs verify lists them)")
	case path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../"):
		return "", fmt.Errorf("%s is not inside the workspace: give a path relative to it", textsafe.Escape(rel))
	case c == ".git" || strings.HasPrefix(c, ".git/") || c == policy.OrchestrationDir || strings.HasPrefix(c, policy.OrchestrationDir+"/"):
		return "", fmt.Errorf("%s is not governed by the ledger (git's and intentfs's own files); there is nothing to accept", textsafe.Escape(rel))
	}
	return c, nil
}

// Describe reads the path rel below source as it is now, without
// following a symlink, and returns the change that records its
// acceptance by who for reason. A path that does not exist is accepted as
// absent; a directory, a symlink or a device is refused.
func Describe(source, rel string, who Who, reason string, now time.Time) (ledger.Change, Result, error) {
	rel, err := Clean(rel)
	if err != nil {
		return ledger.Change{}, Result{}, err
	}
	res := Result{Path: rel}
	c := ledger.Change{Event: ledger.EventAccept, Path: rel, Op: "accept", Code: "ACCEPTED", Time: now}
	state, err := read(source, rel, &res)
	if err != nil {
		return ledger.Change{}, Result{}, err
	}
	c.PostHash, c.Lines, c.Mode = res.Hash, state.lines, res.Mode
	c.Reason = fmt.Sprintf("accepted by %s as %s", who, state.what)
	if reason = strings.TrimSpace(reason); reason != "" {
		c.Reason += ": " + reason
	}
	return c, res, nil
}

type readState struct {
	lines int
	what  string
}

func read(source, rel string, res *Result) (readState, error) {
	rootFd, err := syscall.Open(source, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return readState{}, fmt.Errorf("opening the workspace %s: %w", source, err)
	}
	defer syscall.Close(rootFd)
	fd, err := safeio.OpenBeneath(rootFd, rel, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, syscall.ENOENT):
		return readState{what: "absent"}, nil
	case errors.Is(err, syscall.ELOOP):
		return readState{}, fmt.Errorf("%s is (or lies below) a symlink; accept the regular files it stands for", textsafe.Escape(rel))
	case err != nil:
		return readState{}, fmt.Errorf("reading %s: %w", textsafe.Escape(rel), err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return readState{}, fmt.Errorf("reading %s: %w", textsafe.Escape(rel), err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return readState{}, fmt.Errorf("%s is a directory: name the files in it to accept (intentfs verify lists them)", textsafe.Escape(rel))
	default:
		return readState{}, fmt.Errorf("%s is not a regular file; only files' contents are recorded", textsafe.Escape(rel))
	}
	hash, lines, _, err := ledger.ContentHash(f)
	if err != nil {
		return readState{}, fmt.Errorf("reading %s: %w", textsafe.Escape(rel), err)
	}
	res.Hash = hash
	res.Mode = fmt.Sprintf("%04o", st.Mode&0o7777)
	res.Owner = fmt.Sprintf("%d:%d", st.Uid, st.Gid)
	return readState{lines: lines, what: fmt.Sprintf("%s, mode %s, owner %s", ledger.ShortHash(hash), res.Mode, res.Owner)}, nil
}
