package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Subtree lists what sits below a directory, for the one decision that
// must see it: moving a directory whose scope is not a plain prefix. fn is
// called with each entry's path relative to the directory ("a", "a/b")
// and whether it is a directory; returning false stops the listing. The
// lister returns ErrSubtreeTooLarge past its bound, or the error that kept
// it from listing everything.
type Subtree func(fn func(rel string, isDir bool) bool) error

// ErrSubtreeTooLarge is returned by a Subtree that stopped at its bound.
var ErrSubtreeTooLarge = errors.New("too many entries to check")

// wholeDecision decides a change that replaces or moves everything below
// dir (a directory rename, or an exchange involving one): every entry
// that leaves or arrives at dir must be in scope there. lists are the
// listings of the contents involved: for a move, the moved directory's;
// for an exchange, both sides'.
func (s *Snapshot) wholeDecision(in *Intent, dir string, lists []Subtree) (bool, string) {
	if in.scope.prefixCovers(dir) {
		return true, ""
	}
	scope := strings.Join(in.OwnedScope, ", ")
	for _, list := range lists {
		if list == nil {
			return false, fmt.Sprintf("directory %s is not wholly inside the owned_scope of %s (%s): moving it would change files outside it", dir, in.ID, scope)
		}
		var outside string
		err := list(func(rel string, isDir bool) bool {
			p := dir + "/" + rel
			if dir == "" {
				p = rel
			}
			if s.Ignore.Match(p, isDir) || in.InScope(p) || isDir && in.scope.isScopeAncestor(p) {
				return true
			}
			outside = p
			return false
		})
		switch {
		case outside != "":
			return false, fmt.Sprintf("moving directory %s would move %s, which is outside the owned_scope of %s (%s)", dir, outside, in.ID, scope)
		case errors.Is(err, ErrSubtreeTooLarge):
			return false, fmt.Sprintf("directory %s holds too many entries to check against the owned_scope of %s (%s), which is not a plain prefix such as dir/**: move its files in smaller steps", dir, in.ID, scope)
		case err != nil:
			return false, fmt.Sprintf("the entries of directory %s could not be checked against the owned_scope of %s: %v", dir, in.ID, err)
		}
	}
	return true, ""
}
