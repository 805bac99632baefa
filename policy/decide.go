package policy

import (
	"fmt"
	"path"
	"strings"
)

// Op is a kind of change to the workspace tree.
type Op string

// The operations the decision function knows. Reads are not operations:
// they are never decided.
const (
	OpCreate        Op = "create"
	OpOpenWrite     Op = "open_write" // open with O_WRONLY, O_RDWR or O_TRUNC
	OpTruncate      Op = "truncate"
	OpChmod         Op = "chmod"
	OpChown         Op = "chown"
	OpUtimes        Op = "utimes"
	OpMkdir         Op = "mkdir"
	OpMknod         Op = "mknod"
	OpSymlink       Op = "symlink"
	OpLink          Op = "link"
	OpUnlink        Op = "unlink"
	OpRmdir         Op = "rmdir"
	OpRename        Op = "rename"
	OpSetxattr      Op = "setxattr"
	OpRemovexattr   Op = "removexattr"
	OpFallocate     Op = "fallocate"
	OpCopyFileRange Op = "copy_file_range"
	// OpLock is a file lock (flock, POSIX or OFD) taken through the
	// mount; it changes nothing, and only DecideLock decides it.
	OpLock Op = "lock"
)

// Rename flags, as in renameat2(2).
const (
	RenameNoReplace uint32 = 1 << 0
	RenameExchange  uint32 = 1 << 1
)

// Caller identifies the process asking for a change.
type Caller struct {
	Pid uint32
	Uid uint32
	Gid uint32
}

// Request is one change to decide.
type Request struct {
	Op Op
	// Path is the workspace-relative path being changed: for link, the new
	// name; for rename, the source.
	Path string
	// Path2 is the second path of two-path operations: the rename
	// destination, or the existing file a link points at.
	Path2 string
	// IsDir and IsDir2 tell whether Path and Path2 are (or will be)
	// directories; a directory move needs its whole subtree in scope.
	IsDir, IsDir2 bool
	// RenameFlags carries RenameNoReplace or RenameExchange.
	RenameFlags uint32
	// Subtree and Subtree2 list what is below Path and Path2 when they
	// are directories that a rename moves. They are only called when the
	// scope is not a plain prefix; without them such a move is denied.
	Subtree, Subtree2 Subtree
	// Destroys is set when the change destroys content of an existing
	// file whatever the operation is called: a truncation to a smaller
	// size, an O_TRUNC open of a non-empty file, a rename over an
	// existing entry. Deciding ignores it; approval rules on deletions
	// hold such a change as they hold an unlink (see ApprovalRule).
	Destroys bool
	// Removes, on a rename that takes a governed entry to an exempt name
	// (CrossOut), lists every governed file and directory it takes along,
	// which the move removes from the governed tree. Deciding ignores it;
	// approval rules on deletions count each entry as its own unlink or
	// rmdir, with the bytes it destroys.
	Removes []Removal
	// Intent is the id of the active intent, "" when none is selected.
	Intent string
	Caller Caller
}

// Code is the machine-readable outcome of a decision.
type Code string

// Decision codes.
const (
	CodeAllowed       Code = "ALLOWED"
	CodeExempt        Code = "EXEMPT"
	CodeFailOpen      Code = "FAIL_OPEN"
	CodeNoIntent      Code = "NO_ACTIVE_INTENT"
	CodeUnknownIntent Code = "UNKNOWN_INTENT"
	CodeNotInProgress Code = "INTENT_NOT_IN_PROGRESS"
	CodeOutOfScope    Code = "OUT_OF_SCOPE"
	CodeProtected     Code = "PROTECTED_PATH"
	CodeInternal      Code = "INTERNAL_ERROR"
)

// Validation is the scope_validation value recorded in the ledger.
type Validation string

// Scope validation outcomes.
const (
	ValidationPass   Validation = "PASS"
	ValidationFail   Validation = "FAIL"
	ValidationExempt Validation = "EXEMPT"
)

// Decision is the answer to a Request.
type Decision struct {
	Allow      bool
	Code       Code
	Reason     string
	Validation Validation
	// Path is the path the decision turned on (the offending one on a
	// denial).
	Path string
	// Binding marks a refusal that no enforcement mode lifts.
	Binding bool
	// Observed marks a change allowed only because observe mode is in
	// force: Code and Reason are the refusal it would have had.
	Observed bool
}

// Snapshot is an immutable view of the policy in force. Decisions read it
// without locks; a reload swaps in a new one.
type Snapshot struct {
	Intents *Intents
	Ignore  *Ignore
	// FailOpen allows changes when no decision can be made, instead of
	// denying them.
	FailOpen bool
}

// CleanRel normalises a workspace-relative path and reports whether it is
// one (no absolute paths, no climbing out with "..").
func CleanRel(p string) (string, bool) {
	if p == "" || p == "." {
		return "", true
	}
	if strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return "", false
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	if c == "." {
		// "a/.." is the root, spelled as the root always is.
		return "", true
	}
	return c, true
}

// Decide is the single policy decision for every change made through the
// mount.
func (s *Snapshot) Decide(r Request) Decision {
	if s == nil || s.Intents == nil {
		return s.cannotDecide(r.Path, "no valid policy is loaded")
	}
	type target struct {
		path  string
		isDir bool
		// whole is set when the operation replaces or moves everything
		// below path; lists are the contents that leave or arrive there.
		whole bool
		lists []Subtree
	}
	targets := []target{{path: r.Path, isDir: r.IsDir}}
	switch r.Op {
	case OpRename:
		targets[0].whole = r.IsDir
		targets = append(targets, target{path: r.Path2, isDir: r.IsDir, whole: r.IsDir})
		if r.IsDir {
			targets[0].lists = []Subtree{r.Subtree}
			targets[1].lists = []Subtree{r.Subtree}
		}
		if r.RenameFlags&RenameExchange != 0 {
			// Each side loses what it held and receives the other's.
			var lists []Subtree
			if r.IsDir {
				lists = append(lists, r.Subtree)
			}
			if r.IsDir2 {
				lists = append(lists, r.Subtree2)
			}
			targets[0].whole = r.IsDir || r.IsDir2
			targets[1].whole = r.IsDir || r.IsDir2
			targets[0].lists, targets[1].lists = lists, lists
		}
	case OpLink:
		// The existing file must be in scope too, or a link would let the
		// agent write to it through a name that is.
		targets = append(targets, target{path: r.Path2})
	}
	for i := range targets {
		c, ok := CleanRel(targets[i].path)
		if !ok {
			return s.cannotDecide(targets[i].path, "path is not inside the workspace")
		}
		// "" is the workspace root itself (chmod or utimes of "."): it is
		// decided like any path, so only a scope such as "**" covers it.
		targets[i].path = c
	}

	in := s.Intents.Get(r.Intent)
	// Built-in protections come first: nothing, not even fail-open,
	// lifts them, except an explicit .git/ grant for git paths.
	for _, t := range targets {
		switch classify(r.Op, t.path) {
		case classPolicy:
			return deny(CodeProtected, t.path, protectedReason(t.path))
		case classGitSensitive:
			if in == nil || in.Status != StatusInProgress || !grantsGitExplicitly(in, t.path) {
				return deny(CodeProtected, t.path, protectedReason(t.path))
			}
		}
	}

	exempt := true
	exemptAt := make([]bool, len(targets))
	for i, t := range targets {
		exemptAt[i] = classify(r.Op, t.path) == classGitExempt || s.Ignore.Match(t.path, t.isDir)
		if !exemptAt[i] {
			exempt = false
		}
	}
	if r.Op == OpLink && exemptAt[0] != exemptAt[1] {
		// Two names of one file, one exempt and one governed: writes
		// through the exempt name would change governed content with no
		// intent and no record.
		exemptName, governed := targets[0].path, targets[1].path
		if exemptAt[1] {
			exemptName, governed = governed, exemptName
		}
		d := deny(CodeOutOfScope, targets[0].path, fmt.Sprintf("a hard link between %s (exempt from governance) and %s (governed) would let writes through %s change %s unrecorded: copy the file instead", exemptName, governed, exemptName, governed))
		d.Binding = true
		return d
	}
	if r.Op == OpRename && r.RenameFlags&RenameExchange != 0 && exemptAt[0] != exemptAt[1] {
		if exemptAt[0] {
			return exchangeAcross(targets[1].path, targets[0].path)
		}
		return exchangeAcross(targets[0].path, targets[1].path)
	}
	if exempt {
		return Decision{Allow: true, Code: CodeExempt, Validation: ValidationExempt, Path: targets[0].path,
			Reason: "exempt by .intentignore or the built-in .git rule"}
	}

	if r.Intent == "" {
		return deny(CodeNoIntent, targets[0].path, "no intent is active: select one with `intentfs select ID` or by writing its id to .intentfs/active")
	}
	if in == nil {
		return deny(CodeUnknownIntent, targets[0].path, fmt.Sprintf("active intent %s is not defined in %s: select an existing intent", r.Intent, s.Intents.File))
	}
	if in.Status != StatusInProgress {
		return deny(CodeNotInProgress, targets[0].path, statusReason(in))
	}
	for _, t := range targets {
		if classify(r.Op, t.path) == classGitExempt || classify(r.Op, t.path) == classGitSensitive || s.Ignore.Match(t.path, t.isDir) {
			continue
		}
		if t.whole && in.InScope(t.path) {
			if ok, why := s.wholeDecision(in, t.path, t.lists); !ok {
				return deny(CodeOutOfScope, t.path, why)
			}
			continue
		}
		switch {
		case t.whole:
			return deny(CodeOutOfScope, t.path, fmt.Sprintf("directory %s is not wholly inside the owned_scope of %s (%s): moving it would change files outside it", t.path, in.ID, strings.Join(in.OwnedScope, ", ")))
		case in.InScope(t.path):
		case r.Op == OpMkdir && in.scope.isScopeAncestor(t.path):
		default:
			return deny(CodeOutOfScope, t.path, fmt.Sprintf("%s is outside the owned_scope of %s (%s)", shownPath(t.path), in.ID, strings.Join(in.OwnedScope, ", ")))
		}
	}
	return Decision{Allow: true, Code: CodeAllowed, Validation: ValidationPass, Path: targets[0].path}
}

func statusReason(in *Intent) string {
	switch in.Status {
	case StatusPending:
		return fmt.Sprintf("intent %s is PENDING: start it (status IN_PROGRESS) before changing files", in.ID)
	case StatusBlocked:
		return fmt.Sprintf("intent %s is BLOCKED: unblock it (status IN_PROGRESS) before changing files", in.ID)
	case StatusComplete:
		return fmt.Sprintf("intent %s is COMPLETE: its work is closed; select an IN_PROGRESS intent", in.ID)
	case StatusArchived:
		return fmt.Sprintf("intent %s is ARCHIVED: select an IN_PROGRESS intent", in.ID)
	}
	return fmt.Sprintf("intent %s has status %s, not IN_PROGRESS", in.ID, in.Status)
}

// shownPath names p in a reason: the workspace's top directory has the
// empty path, which a reason would show as nothing at all.
func shownPath(p string) string {
	if p == "" {
		return "the workspace's top directory (.)"
	}
	return p
}

func deny(code Code, p, reason string) Decision {
	return Decision{Code: code, Reason: reason, Validation: ValidationFail, Path: p}
}

// cannotDecide is the fail-closed path: deny, unless the operator chose
// fail-open.
func (s *Snapshot) cannotDecide(p, why string) Decision {
	if s != nil && s.FailOpen {
		return Decision{Allow: true, Code: CodeFailOpen, Validation: ValidationExempt, Path: p, Reason: "fail-open: " + why}
	}
	return deny(CodeInternal, p, "no decision could be made ("+why+"), so the change is denied (fail-closed)")
}
