package policy

import (
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// escapesParent checks that every owned_scope pattern of child lies within
// the parent's scope. Glob containment is checked on representative paths:
// for each child pattern, paths it matches are built by filling its
// wildcards (and each brace alternative), and every one must be in the
// parent's scope. It returns the first escaping pattern's index and a path
// that shows the escape.
func escapesParent(child, parent *Intent) (int, string, bool) {
	for i, pat := range child.OwnedScope {
		for _, sample := range samplePaths(pat) {
			if !parent.InScope(sample) {
				return i, sample, false
			}
		}
	}
	return 0, "", true
}

// samplePaths returns paths that pattern matches, one per way of filling
// its wildcards: "**" as nothing and as two directories, "*" and "?" with
// a probe name, a class with its first member.
func samplePaths(pattern string) []string {
	var out []string
	for _, alt := range expandBraces(pattern) {
		for _, deep := range []string{"", "probe-dir/probe-sub"} {
			s := fill(alt, deep)
			if ok, _ := doublestar.Match(pattern, s); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func fill(p, deep string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '*' && i+1 < len(p) && p[i+1] == '*':
			b.WriteString(deep)
			i++
		case c == '*':
			b.WriteString("probe")
		case c == '?':
			b.WriteByte('p')
		case c == '[':
			end := strings.IndexByte(p[i:], ']')
			if end < 0 {
				b.WriteByte(c)
				continue
			}
			class := strings.TrimLeft(p[i+1:i+end], "!^")
			if len(class) > 0 && p[i+1] != '!' && p[i+1] != '^' {
				b.WriteByte(class[0])
			} else {
				b.WriteByte('~')
			}
			i += end
		case c == '\\' && i+1 < len(p):
			b.WriteByte(p[i+1])
			i++
		default:
			b.WriteByte(c)
		}
	}
	// Collapse what an empty "**" leaves behind ("a//b", "a/", "/a").
	s := b.String()
	for strings.Contains(s, "//") {
		s = strings.ReplaceAll(s, "//", "/")
	}
	return strings.Trim(s, "/")
}

// expandBraces expands {a,b} alternatives (not nested).
func expandBraces(p string) []string {
	open := strings.IndexByte(p, '{')
	if open < 0 {
		return []string{p}
	}
	closing := strings.IndexByte(p[open:], '}')
	if closing < 0 {
		return []string{p}
	}
	var out []string
	for _, alt := range strings.Split(p[open+1:open+closing], ",") {
		out = append(out, expandBraces(p[:open]+alt+p[open+closing+1:])...)
	}
	return out
}
