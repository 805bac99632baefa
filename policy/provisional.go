package policy

import (
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Atomic saves (sed -i, perl -i, editors, "write a temporary, rename it
// over") create a new file beside the file they change and rename it
// over that file. In a scope that names files rather than directories
// ("README.md", "src/*.go") the temporary's name is outside the scope. A
// provisional file is such a temporary, let exist for a bounded time: the
// scope decides its final name when it is renamed, and one never renamed
// into the scope is removed. Provisional decides which refused creations
// may be provisional; the filesystem keeps and ends them.

// provisionalRefused are the base names that are never provisional
// anywhere: files git or intentfs read as rules, which a temporary must
// not be even for its window.
var provisionalRefused = map[string]bool{
	rootIgnoreFile:   true,
	".gitignore":     true,
	".gitattributes": true,
	".gitmodules":    true,
}

// Provisional reports whether a creation of the new file rel, refused by
// r's decision d, may be made as a provisional file: d refused it for
// being outside the scope (nothing protected, exempt or special), rel is
// an ordinary path, and the intent owns at least one name in rel's
// directory, the name the temporary can be renamed over.
func (s *Snapshot) Provisional(r Request, d Decision) bool {
	if s == nil || s.Intents == nil || d.Allow || d.Code != CodeOutOfScope || r.IsDir {
		return false
	}
	rel, ok := CleanRel(r.Path)
	if !ok || rel == "" || d.Path != rel {
		return false
	}
	if classify(r.Op, rel) != classOrdinary || provisionalRefused[path.Base(rel)] {
		return false
	}
	in := s.Intents.Get(r.Intent)
	if in == nil || in.Status != StatusInProgress {
		return false
	}
	dir := path.Dir(rel)
	if dir == "." {
		dir = ""
	}
	return in.scope.ownsChildOf(dir)
}

// ownsChildOf reports whether some pattern of the scope can match a
// direct file of directory dir ("" is the workspace root): "src/*.go"
// owns names in src, "README.md" in the root, "docs/**" in docs and every
// directory below it, but none in the root.
func (s scopeSet) ownsChildOf(dir string) bool {
	var dirParts []string
	if dir != "" {
		dirParts = strings.Split(dir, "/")
	}
	for _, p := range s.patterns {
		if patternOwnsChild(strings.Split(p, "/"), dirParts) {
			return true
		}
	}
	return false
}

// patternOwnsChild reports whether the pattern components pp can match
// the directory components dp followed by one more name, a file's. A
// component that is not "**" matches exactly one name; "**" matches any
// number, none included, but the file's name is the pattern's last
// component or within a "**". A pattern whose braces hold a "/" cannot be split into
// components, and owns nothing here (fail closed: the creation is refused
// as before).
func patternOwnsChild(pp, dp []string) bool {
	if len(pp) == 0 {
		return false
	}
	for _, c := range pp {
		if strings.Count(c, "{") != strings.Count(c, "}") {
			return false
		}
	}
	if pp[0] == "**" {
		if len(pp) == 1 {
			return true
		}
		if patternOwnsChild(pp[1:], dp) {
			return true
		}
		return len(dp) > 0 && patternOwnsChild(pp, dp[1:])
	}
	if len(dp) == 0 {
		// pp[0] is the child's name, and must be the pattern's last: in
		// "docs/**", "docs" names a directory, which owns no file in the
		// directory holding it.
		return len(pp) == 1 && doublestar.ValidatePattern(pp[0])
	}
	ok, err := doublestar.Match(pp[0], dp[0])
	return ok && err == nil && patternOwnsChild(pp[1:], dp[1:])
}
