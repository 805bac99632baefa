package policy

import (
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// scopeSet is an intent's owned_scope, compiled for matching.
type scopeSet struct {
	patterns []string
	// dirPrefixes are the literal directory parts of each pattern (for
	// "src/api/**" it is "src/api"); creating these directories and their
	// ancestors is allowed so that the scope can be populated at all.
	dirPrefixes []string
}

func newScopeSet(patterns []string) scopeSet {
	s := scopeSet{patterns: patterns}
	for _, p := range patterns {
		if pre := literalDirPrefix(p); pre != "" {
			s.dirPrefixes = append(s.dirPrefixes, pre)
		}
	}
	return s
}

// literalDirPrefix returns the leading components of pattern that contain
// no glob syntax, excluding the last component.
func literalDirPrefix(pattern string) string {
	parts := strings.Split(pattern, "/")
	var lit []string
	for _, c := range parts[:len(parts)-1] {
		if strings.ContainsAny(c, `*?[]{}\`) {
			break
		}
		lit = append(lit, c)
	}
	return path.Join(lit...)
}

func (s scopeSet) matches(rel string) bool {
	for _, p := range s.patterns {
		// Patterns were validated at load, so an error cannot happen here;
		// treat one as no match (deny) all the same.
		if ok, err := doublestar.Match(p, rel); ok && err == nil {
			return true
		}
	}
	return false
}

// prefixCovers reports whether one pattern alone covers dir and every
// path that may ever sit below it: "**", or a literal directory followed
// by "/**" that is dir or one of its ancestors. This is exact, so moving a
// directory under such a scope needs no look at what it holds. For any
// other pattern ("a/**/[!_]*", "src/*.go") a name below dir can fall
// outside the scope, and only the directory's real entries can tell.
func (s scopeSet) prefixCovers(dir string) bool {
	for _, p := range s.patterns {
		if p == "**" {
			return true
		}
		lit, ok := strings.CutSuffix(p, "/**")
		if !ok || strings.ContainsAny(lit, `*?[]{}\`) {
			continue
		}
		if dir == lit || strings.HasPrefix(dir, lit+"/") {
			return true
		}
	}
	return false
}

// isScopeAncestor reports whether dir is one of the literal directory
// prefixes of a pattern, or an ancestor of one.
func (s scopeSet) isScopeAncestor(dir string) bool {
	for _, pre := range s.dirPrefixes {
		if pre == dir || strings.HasPrefix(pre, dir+"/") {
			return true
		}
	}
	return false
}
