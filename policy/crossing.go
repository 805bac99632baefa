package policy

import "fmt"

// Crossing is how a rename relates to the governed tree: whether what it
// moves leaves governance, enters it, or stays on one side.
type Crossing int

// Crossings of a rename.
const (
	// CrossNone: both names are governed, or both are exempt.
	CrossNone Crossing = iota
	// CrossOut: a governed entry moves to an exempt name. For the
	// ledger, the scope and the approval rules it is a removal of every
	// governed file it takes along: nothing records what happens to it
	// there.
	CrossOut
	// CrossIn: an exempt entry moves to a governed name. Its content is
	// new to the ledger, written by the process that moved it.
	CrossIn
)

// Exempt reports whether changes to rel are exempt from governance: an
// .intentignore match or git's own state below .git.
func (s *Snapshot) Exempt(rel string, isDir bool) bool {
	if s == nil {
		return false
	}
	c, ok := CleanRel(rel)
	if !ok {
		return false
	}
	return classify(OpRename, c) == classGitExempt || s.Ignore.Match(c, isDir)
}

// Crossing says how a rename of from (a directory if isDir) to to crosses
// the edge of the governed tree.
func (s *Snapshot) Crossing(from, to string, isDir bool) Crossing {
	fromExempt, toExempt := s.Exempt(from, isDir), s.Exempt(to, isDir)
	switch {
	case !fromExempt && toExempt:
		return CrossOut
	case fromExempt && !toExempt:
		return CrossIn
	}
	return CrossNone
}

// Removal is one governed entry a change removes from the governed tree
// (a file or directory that a rename takes to an exempt name), for the
// approval rules on deletions: each is counted as its own unlink or
// rmdir, with the bytes it destroys.
type Removal struct {
	Path  string
	IsDir bool
	Size  int64
}

// exchangeAcross is the refusal of a RENAME_EXCHANGE between an exempt
// and a governed name: each side's content would cross the edge of the
// governed tree at once, one leaving it and one entering it.
func exchangeAcross(governed, exempt string) Decision {
	d := deny(CodeOutOfScope, governed, fmt.Sprintf("renameat2(RENAME_EXCHANGE) of %s (governed) with %s (exempt from governance) would swap content into and out of the governed tree at once: move them one at a time", governed, exempt))
	d.Binding = true
	return d
}
