package policy

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/intentfs/intentfs/internal/safeio"
)

// IgnoreFiles lists the ignore files, in the order they are read. A new slice each call, so no importer can change the list.
func IgnoreFiles() []string { return []string{".orchestration/.intentignore", ".intentignore"} }

// ignoreRule is one line of an .intentignore file.
type ignoreRule struct {
	globs   []string // doublestar patterns equivalent to the gitignore line
	negate  bool
	dirOnly bool
}

// Ignore matches paths exempted from governance by .intentignore files,
// with gitignore semantics: "#" comments, "!" negation, a trailing "/" for
// directories only, a leading or inner "/" anchors to the workspace root,
// and a match on a directory covers everything below it.
type Ignore struct {
	rules []ignoreRule
}

// MaxIgnoreBytes bounds the size of one ignore file. An ignore file is a
// few dozen lines; a megabyte is far beyond any real one, and anything
// larger is refused rather than parsed.
const MaxIgnoreBytes = 1 << 20

// LoadIgnore reads the ignore files under source. Missing files are fine;
// anything else that is not a regular file of at most MaxIgnoreBytes,
// reached without a symlink, is an error (see safeio.ReadFile).
func LoadIgnore(source string) (*Ignore, []Diagnostic, error) {
	return IgnoreFrom(func(rel string) ([]byte, error) {
		return safeio.ReadFile(source, rel, MaxIgnoreBytes)
	})
}

// IgnoreFrom builds the Ignore from the ignore files (IgnoreFiles, in
// order) as read returns them: from a directory, or from a git revision.
// read returns an error wrapping os.ErrNotExist for a file that is not
// there, which is fine; any other error is returned, as is a pattern
// that does not parse (a *ValidationError).
func IgnoreFrom(read func(rel string) ([]byte, error)) (*Ignore, []Diagnostic, error) {
	ig := &Ignore{}
	var diags []Diagnostic
	for _, rel := range IgnoreFiles() {
		data, err := read(rel)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		d := ig.parse(rel, data)
		diags = append(diags, d...)
	}
	for _, d := range diags {
		if d.Severity == SevError {
			return nil, diags, &ValidationError{Diagnostics: diags}
		}
	}
	return ig, diags, nil
}

func (ig *Ignore) parse(file string, data []byte) []Diagnostic {
	var diags []Diagnostic
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{}
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\`) {
			line = line[1:] // "\#" and "\!" escape the first character
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		anchored := strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		if line == "" || !doublestar.ValidatePattern(line) {
			// The line itself is not quoted: status is readable by the
			// agent, and the file's content is not necessarily.
			diags = append(diags, Diagnostic{File: file, Line: lineNo, Column: 1, Severity: SevError,
				Message: "not a valid ignore pattern (check brackets and braces)"})
			continue
		}
		base := line
		if !anchored && !strings.HasPrefix(line, "**/") {
			base = "**/" + line
		}
		r.globs = []string{base, base + "/**"}
		ig.rules = append(ig.rules, r)
	}
	if err := sc.Err(); err != nil {
		diags = append(diags, Diagnostic{File: file, Line: 1, Column: 1, Severity: SevError, Message: err.Error()})
	}
	return diags
}

// Match reports whether rel (workspace-relative) is exempt. isDir tells
// whether rel itself is a directory, for rules ending in "/".
func (ig *Ignore) Match(rel string, isDir bool) bool {
	if ig == nil || rel == "" {
		return false
	}
	matched := false
	for _, r := range ig.rules {
		// A directory-only rule matches the directory itself only when it
		// is one, and always matches what lies below it.
		hit := false
		if ok, _ := doublestar.Match(r.globs[1], rel); ok {
			hit = !(r.dirOnly && matchesExactly(r.globs[0], rel) && !isDir)
		}
		if !hit && (!r.dirOnly || isDir) {
			hit, _ = doublestar.Match(r.globs[0], rel)
		}
		if hit {
			matched = !r.negate
		}
	}
	return matched
}

func matchesExactly(glob, rel string) bool {
	ok, _ := doublestar.Match(glob, rel)
	return ok
}
