// Package scopesuggest proposes owned_scope globs that cover a set of
// written paths, compressed to few globs a human would write: several
// files of one directory become dir/*.ext or dir/*, changes spread over a
// directory's subdirectories become dir/**. It never proposes a glob at
// the workspace root (`*`, `**`, `*.go`): root files are named one by
// one, so a proposal never covers the whole tree or the governance files
// there.
package scopesuggest

import (
	"path"
	"slices"
	"strings"

	"github.com/intentfs/intentfs/policy"
)

// Result is a proposal: the globs, and the paths left out of it.
type Result struct {
	// Globs cover every path of the input that is not Skipped, sorted.
	Globs []string
	// Skipped are the governance paths (policy, ignore files, .git),
	// which no owned_scope glob grants, and paths that are not
	// workspace-relative.
	Skipped []string
}

// node is a directory of the written tree.
type node struct {
	files []string // names of written entries directly in it
	dirs  map[string]*node
}

func newNode() *node { return &node{dirs: map[string]*node{}} }

// Suggest proposes globs that cover paths.
func Suggest(paths []string) Result {
	var res Result
	root := newNode()
	seen := map[string]bool{}
	for _, p := range paths {
		c, ok := policy.CleanRel(p)
		if !ok || c == "" || policy.Governance(c) {
			if !seen["skip:"+p] {
				seen["skip:"+p] = true
				res.Skipped = append(res.Skipped, p)
			}
			continue
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		root.add(strings.Split(c, "/"))
	}
	// A path that is also a directory of the tree (a mkdir, then files
	// in it) is covered by the directory's globs or its own name.
	res.Globs = root.globs("")
	slices.Sort(res.Globs)
	res.Globs = slices.Compact(res.Globs)
	slices.Sort(res.Skipped)
	return res
}

func (n *node) add(parts []string) {
	if len(parts) == 1 {
		n.files = append(n.files, parts[0])
		return
	}
	d := n.dirs[parts[0]]
	if d == nil {
		d = newNode()
		n.dirs[parts[0]] = d
	}
	d.add(parts[1:])
}

// globs covers what was written in n, which is at dir ("" for the root).
func (n *node) globs(dir string) []string {
	var out []string
	if dir == "" {
		// The root: name each file; never generalize here.
		for _, f := range n.files {
			out = append(out, escape(f))
		}
		for name, d := range n.dirs {
			out = append(out, d.globs(escape(name))...)
		}
		return out
	}
	// A file named like a subdirectory was a directory made (mkdir) and
	// written into: the subdirectory's globs need it too.
	files := slices.DeleteFunc(slices.Clone(n.files), func(f string) bool { return n.dirs[f] != nil })
	switch {
	case len(n.dirs) >= 2 || (len(n.dirs) == 1 && len(files) > 0):
		return []string{dir + "/**"}
	case len(n.dirs) == 1:
		for name, d := range n.dirs {
			sub := d.globs(dir + "/" + escape(name))
			if slices.Contains(n.files, name) {
				// The directory itself was created or removed too.
				sub = append(sub, dir+"/"+escape(name))
			}
			return sub
		}
	case len(files) == 1:
		return []string{dir + "/" + escape(files[0])}
	}
	if ext := commonExt(files); ext != "" {
		return []string{dir + "/*" + escape(ext)}
	}
	return []string{dir + "/*"}
}

// commonExt is the extension every name shares (".go"), "" if none.
func commonExt(names []string) string {
	ext := ""
	for i, n := range names {
		e := path.Ext(n)
		if e == "" || e == n {
			return "" // no extension, or a dotfile such as .env
		}
		if i == 0 {
			ext = e
		} else if e != ext {
			return ""
		}
	}
	return ext
}

// escape quotes the characters doublestar reads as pattern syntax, so a
// name is matched literally.
func escape(name string) string {
	if !strings.ContainsAny(name, `*?[]{}\`) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
