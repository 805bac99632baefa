package docscheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines bounds the README: what intentfs is, the setup, the first
// commands and links into docs/; everything else belongs in the manual.
const readmeMaxLines = 220

// moduleRoot is the directory holding go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// docFiles are the markdown files whose links are checked, relative to
// the module root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md", "ARCHITECTURE.md", "SECURITY.md"}
	manual, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(manual) == 0 {
		t.Fatal("docs/ holds no markdown file: the manual is missing")
	}
	for _, f := range manual {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rel)
	}
	return files
}

func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move the detail into docs/ and link to it", n, readmeMaxLines)
	}
}

func TestArchitecturePackageTable(t *testing.T) {
	root := moduleRoot(t)
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.Bytes())
	}
	modCmd := exec.Command("go", "list", "-m")
	modCmd.Dir = root
	mod, err := modCmd.Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	prefix := strings.TrimSpace(string(mod)) + "/"
	var listed []string
	for _, line := range strings.Fields(string(out)) {
		listed = append(listed, strings.TrimPrefix(line, prefix))
	}

	arch, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	table, err := packageTable(arch)
	if err != nil {
		t.Fatalf("ARCHITECTURE.md: %v", err)
	}
	for _, p := range listed {
		if !slices.Contains(table, p) {
			t.Errorf("ARCHITECTURE.md's package table has no row for %s: add one saying its one job", p)
		}
	}
	for _, p := range table {
		if !slices.Contains(listed, p) {
			t.Errorf("ARCHITECTURE.md's package table lists %s, which go list ./... does not: remove the row or fix its name", p)
		}
	}
}

// packageTable returns the first column of the table under the heading
// "## Packages": each row's package path in backquotes.
func packageTable(md []byte) ([]string, error) {
	var pkgs []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			in = strings.TrimSpace(line) == "## Packages"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cell, _, ok := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
		if !ok {
			return nil, fmt.Errorf("package row %q: the package's path must be in backquotes", line)
		}
		if slices.Contains(pkgs, cell) {
			return nil, fmt.Errorf("package %s has two rows", cell)
		}
		pkgs = append(pkgs, cell)
	}
	if len(pkgs) == 0 {
		return nil, errors.New(`no package table under "## Packages"`)
	}
	return pkgs, sc.Err()
}

func TestRelativeLinksResolve(t *testing.T) {
	root := moduleRoot(t)
	anchors := map[string][]string{} // markdown file (slash path from root) -> its heading anchors
	anchorsOf := func(rel string) []string {
		if a, ok := anchors[rel]; ok {
			return a
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		a := headingAnchors(b)
		anchors[rel] = a
		return a
	}
	checked := 0
	for _, file := range docFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(b) {
			if isExternal(l.target) {
				continue
			}
			checked++
			target, anchor, _ := strings.Cut(l.target, "#")
			dest := filepath.ToSlash(file)
			if target != "" {
				dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), filepath.FromSlash(target)))
				if strings.HasPrefix(dest, "../") {
					t.Errorf("%s:%d: link %q leaves the repository", file, l.line, l.target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", file, l.line, l.target, dest)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s:%d: link %q names a heading in a file that is not markdown", file, l.line, l.target)
				continue
			}
			if !slices.Contains(anchorsOf(dest), anchor) {
				t.Errorf("%s:%d: link %q: %s has no heading #%s", file, l.line, l.target, dest, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the parser is broken or the manual has no links")
	}
}

type link struct {
	target string
	line   int
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
	schemeRE     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// markdownLinks finds the targets of inline links outside code blocks and
// code spans. A link's text may wrap onto earlier lines; its target may
// not wrap, and none in these files does.
func markdownLinks(md []byte) []link {
	var links []link
	fence := ""
	for i, line := range strings.Split(string(md), "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		line = inlineCodeRE.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			links = append(links, link{target: m[1], line: i + 1})
		}
	}
	return links
}

func isExternal(target string) bool {
	return schemeRE.MatchString(target)
}

// headingAnchors returns the anchors GitHub gives a file's headings:
// the text lowercased, without punctuation, spaces as hyphens, and a
// count appended to repeats.
func headingAnchors(md []byte) []string {
	var anchors []string
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(string(md), "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(text, " ") {
			continue
		}
		slug := slugify(strings.TrimSpace(text))
		if n := seen[slug]; n > 0 {
			anchors = append(anchors, fmt.Sprintf("%s-%d", slug, n))
		} else {
			anchors = append(anchors, slug)
		}
		seen[slug]++
	}
	return anchors
}

var headingLinkRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

func slugify(heading string) string {
	heading = headingLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlugify(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Running an agent: `intentfs run`", "running-an-agent-intentfs-run"},
		{"The trusted upstream: `upstream:`", "the-trusted-upstream-upstream"},
		{"`intentfs check [REV_RANGE]`: the gate for reviewers and CI", "intentfs-check-rev_range-the-gate-for-reviewers-and-ci"},
		{"io_uring against /dev/fuse", "io_uring-against-devfuse"},
		{"Known limits", "known-limits"},
		{"See [the spec](https://example.com) here", "see-the-spec-here"},
	} {
		if got := slugify(tc.heading); got != tc.want {
			t.Errorf("slugify(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
	md := []byte("# A\n```\n# not a heading\n```\n## A\n### B\n")
	if got, want := headingAnchors(md), []string{"a", "a-1", "b"}; !slices.Equal(got, want) {
		t.Errorf("headingAnchors = %v, want %v", got, want)
	}
}
