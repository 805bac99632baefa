package gitgate

import (
	"slices"
	"strings"

	"github.com/intentfs/intentfs/internal/gitexec"
)

// refKind is what a path inside a git directory is to the gate.
type refKind int

const (
	notRef     refKind = iota
	branchRef          // refs/heads/<name>: a loose branch
	headRef            // HEAD, or a linked worktree's HEAD
	packedRefs         // packed-refs
	refDir             // refs, refs/heads or a directory below it
	reftable           // the reftable backend's files
)

// classifyRef says what inner (a path inside a git directory) is.
func classifyRef(inner string) refKind {
	switch {
	case strings.HasSuffix(inner, ".lock"):
		// A lock file is not a ref (git refuses ref names ending in
		// .lock); renaming it over one is what is judged.
		return notRef
	case inner == "HEAD":
		return headRef
	case inner == "packed-refs":
		return packedRefs
	case inner == "refs" || inner == "refs/heads":
		return refDir
	case strings.HasPrefix(inner, "refs/heads/"):
		return branchRef
	case inner == "reftable" || strings.HasPrefix(inner, "reftable/"):
		return reftable
	}
	if name, rest, ok := strings.Cut(strings.TrimPrefix(inner, "worktrees/"), "/"); ok && strings.HasPrefix(inner, "worktrees/") && name != "" && rest == "HEAD" {
		return headRef
	}
	return notRef
}

// looseObject returns the object id a path inside a git directory names,
// if it is a loose object ("objects/ab/cdef…").
func looseObject(inner string) (string, bool) {
	rest, ok := strings.CutPrefix(inner, "objects/")
	if !ok {
		return "", false
	}
	dir, name, ok := strings.Cut(rest, "/")
	if !ok || len(dir) != 2 {
		return "", false
	}
	oid := dir + name
	return oid, gitexec.ValidOID(oid)
}

// packFile returns the pack's base name for a path of objects/pack/, if
// it is a pack or its index. git reads every *.idx there, whatever its
// name, so any name counts: not only the pack-<hash> git writes.
func packFile(inner string) (string, bool) {
	name, ok := strings.CutPrefix(inner, "objects/pack/")
	if !ok || strings.Contains(name, "/") {
		return "", false
	}
	for _, ext := range []string{".pack", ".idx"} {
		if base, ok := strings.CutSuffix(name, ext); ok && base != "" {
			return base, true
		}
	}
	return "", false
}

// objectDir reports whether inner is the object store or one of its
// directories: moving one into place brings in objects unseen one by one.
func objectDir(inner string) bool {
	if inner == "objects" {
		return true
	}
	rest, ok := strings.CutPrefix(inner, "objects/")
	return ok && !strings.Contains(rest, "/")
}

// refValue is a loose ref's content: a commit id or a symbolic ref.
type refValue struct {
	oid    string
	target string // for "ref: <target>"
}

// parseLooseRef parses what git writes into a loose ref or HEAD.
func parseLooseRef(b []byte) (refValue, bool) {
	s := strings.TrimRight(string(b), "\n")
	if strings.ContainsAny(s, "\n\x00") {
		return refValue{}, false
	}
	if t, ok := strings.CutPrefix(s, "ref:"); ok {
		t = strings.TrimSpace(t)
		return refValue{target: t}, t != ""
	}
	return refValue{oid: s}, gitexec.ValidOID(s)
}

// parsePackedBranches returns the branches (refs/heads/*) a packed-refs
// file holds, by name (see parsePackedRefs).
func parsePackedBranches(b []byte) (map[string]string, bool) {
	all, ok := parsePackedRefs(b)
	if !ok {
		return nil, false
	}
	out := map[string]string{}
	for name, oid := range all {
		if strings.HasPrefix(name, "refs/heads/") {
			out[name] = oid
		}
	}
	return out, true
}

// parsePackedRefs returns every ref a packed-refs file holds, by name.
//
// A name that appears twice, or out of order in a file whose header says
// it is sorted, does not parse: git binary-searches a sorted file and
// would find another line than the one a reader of the whole file keeps.
func parsePackedRefs(b []byte) (map[string]string, bool) {
	out := map[string]string{}
	seen := map[string]bool{}
	sorted := false
	prev := ""
	for i, l := range strings.Split(string(b), "\n") {
		if i == 0 && strings.HasPrefix(l, "# pack-refs with:") {
			sorted = slices.Contains(strings.Fields(strings.TrimPrefix(l, "# pack-refs with:")), "sorted")
		}
		if l == "" || l[0] == '#' || l[0] == '^' {
			continue
		}
		oid, name, ok := strings.Cut(l, " ")
		if !ok || !gitexec.ValidOID(oid) || seen[name] || (sorted && name <= prev) {
			return nil, false
		}
		seen[name] = true
		prev = name
		out[name] = oid
	}
	return out, true
}
