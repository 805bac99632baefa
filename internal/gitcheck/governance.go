package gitcheck

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/policy"
)

// GovClass is what a changed path is to governance (ClassifyPath).
type GovClass int

const (
	// GovNone is an ordinary path: a ledger record accounts for it.
	GovNone GovClass = iota
	// GovRules is a file that decides what check and the mount allow, or
	// what runs around the agent: the policy, the ignore files, any other
	// file in .orchestration/ that is not one of the daemon's records, and
	// the agents' hook settings that intentfs hook install writes outside
	// the mount. Changed in a range judged by trusted rules, it is a
	// problem: a human lands it on the base first.
	GovRules
	// GovRecords is a file the daemon keeps in .orchestration/ for people
	// to read (the intent map, the lessons file: markdown directly in
	// .orchestration/) or the .gitignore intentfs init writes there. It
	// decides nothing; a change is a notice for review.
	GovRecords
	// GovAttributes is a .gitattributes file: a rules change where its
	// lines that attach filters, diff or merge drivers or text conversion
	// changed (AttributesChanged), else an ordinary file.
	GovAttributes
)

// hookSettingsFiles are the agents' project settings that intentfs hook
// install writes in the source, never through the mount: they hold the
// hooks that run commands on every tool use.
var hookSettingsFiles = [...]string{".claude/settings.json", ".codex/hooks.json"}

// ClassifyPath classifies a workspace-relative path that a commit
// changes, and says in a few words what it is.
func ClassifyPath(rel string) (GovClass, string) {
	switch {
	case rel == policy.IntentsFile:
		return GovRules, "the policy"
	case slices.Contains(policy.IgnoreFiles(), rel):
		return GovRules, "an ignore file"
	case slices.Contains(hookSettingsFiles[:], rel):
		return GovRules, "the agent's hook settings, which intentfs hook install writes"
	case path.Base(rel) == ".gitattributes":
		return GovAttributes, "git attributes that attach a filter, a diff or merge driver or text conversion"
	}
	inner, ok := strings.CutPrefix(rel, policy.OrchestrationDir+"/")
	switch {
	case !ok:
		return GovNone, ""
	case inner == ".gitignore", !strings.Contains(inner, "/") && strings.HasSuffix(inner, ".md"):
		return GovRecords, "a record intentfs keeps in " + policy.OrchestrationDir + "/ (intent map, lessons)"
	}
	return GovRules, "a file in " + policy.OrchestrationDir + "/, where intentfs reads its rules"
}

// maxAttributesBytes bounds a .gitattributes blob read to compare its
// driver lines; a larger one is taken as a rules change.
const maxAttributesBytes = 1 << 20

// harmlessAttributes are git attributes that change neither the bytes
// git writes nor how a change is shown or merged: a .gitattributes line
// setting only these is no rules change. Every other attribute, and any
// name that is not git's own (a macro defined elsewhere may stand for a
// filter), counts.
var harmlessAttributes = [...]string{"export-ignore", "export-subst", "whitespace", "delta", "linguist-language", "linguist-detectable", "linguist-documentation"}

// AttributesChanged reports whether two versions of a .gitattributes
// file differ in a line that attaches a filter, a diff or merge driver or
// text conversion (or defines a macro, which may): such a line changes
// what git writes into a commit or shows a reviewer.
func AttributesChanged(old, new []byte) bool {
	a, b := driverLines(old), driverLines(new)
	return !slices.Equal(a, b)
}

// driverLines returns the lines of a .gitattributes file that set an
// attribute not in harmlessAttributes, normalised and sorted.
func driverLines(data []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), maxAttributesBytes+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if strings.HasPrefix(line, "[attr]") || attributesCount(attributeNames(line, fields)) {
			out = append(out, strings.Join(fields, " "))
		}
	}
	if sc.Err() != nil {
		// A line longer than the file's bound: taken whole, so any change
		// to the file counts.
		out = append(out, string(data))
	}
	slices.Sort(out)
	return out
}

// attributeNames returns the attribute names a line sets, unsets or
// leaves unspecified, after its pattern (which git may quote).
func attributeNames(line string, fields []string) []string {
	rest := fields[1:]
	if strings.HasPrefix(line, `"`) {
		// A quoted pattern may hold spaces: the attributes follow its
		// closing quote.
		end := closingQuote(line)
		if end < 0 {
			return []string{line} // malformed: not a harmless name
		}
		rest = strings.Fields(line[end+1:])
	}
	names := make([]string, 0, len(rest))
	for _, a := range rest {
		a = strings.TrimLeft(a, "-!")
		name, _, _ := strings.Cut(a, "=")
		names = append(names, name)
	}
	return names
}

func closingQuote(line string) int {
	for i := 1; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

func attributesCount(names []string) bool {
	for _, n := range names {
		if !slices.Contains(harmlessAttributes[:], n) {
			return true
		}
	}
	return false
}

// governance decides a changed path's governance class under trusted
// rules: a finding and whether it is a notice, or ok false for a path
// that is judged as any other (by its records).
func (c *Checker) governance(blobs *gitexec.Blobs, commit, rel string, ch gitexec.Change) (f Finding, notice, ok bool) {
	class, what := ClassifyPath(rel)
	f = Finding{Commit: commit, Path: rel, Status: string(ch.Status), Kind: KindGovernance}
	switch class {
	case GovNone:
		return f, false, false
	case GovRecords:
		f.Detail = governanceNotice
		return f, true, true
	case GovAttributes:
		if !c.attributesChanged(blobs, ch) {
			return f, false, false
		}
	}
	f.Detail = governanceProblem(what)
	return f, false, true
}

func governanceProblem(what string) string {
	return fmt.Sprintf("a governance file (%s) changed in the range: the rules come from the base, never from the change under review; a human must land it on the base first (as with CODEOWNERS), and the range is then checked by it", what)
}

// governsWorkspace reports whether gitPath, a path outside the
// workspace, is a .gitattributes file in a directory above it, whose
// lines apply to the workspace's files.
func (c *Checker) governsWorkspace(gitPath string) bool {
	if path.Base(gitPath) != ".gitattributes" {
		return false
	}
	dir := path.Dir(gitPath)
	return dir == "." || strings.HasPrefix(c.Prefix, dir+"/")
}

// attributesChanged reports whether a change to a .gitattributes file
// changes its driver lines; a version that is not a regular blob or
// cannot be read within the bound counts as changed.
func (c *Checker) attributesChanged(blobs *gitexec.Blobs, ch gitexec.Change) bool {
	read := func(mode, oid string) ([]byte, bool) {
		switch {
		case gitexec.ZeroOID(oid):
			return nil, true
		case mode != "100644" && mode != "100755":
			return nil, false
		}
		data, err := blobs.Read(oid, maxAttributesBytes)
		return data, err == nil
	}
	old, ok1 := read(ch.OldMode, ch.OldBlob)
	new, ok2 := read(ch.NewMode, ch.NewBlob)
	return !ok1 || !ok2 || AttributesChanged(old, new)
}
