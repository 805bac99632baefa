// Package attribution describes a content change precisely: which line
// hunks of the new version changed, each with the hash of its lines, and
// what kind of change it was (configuration, documentation, a declared
// refactor, or an evolution of the intent's behaviour).
package attribution

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"go/scanner"
	"go/token"
	"path"
	"slices"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/intentfs/intentfs/ledger"
)

// MaxDiffBytes bounds the files that are diffed line by line; larger ones
// get a whole-file range.
const MaxDiffBytes = 4 << 20

// Ranges returns the changed line hunks of post (1-based, inclusive) with
// the content hash of each hunk's lines. Lines only removed leave no hunk
// in the new version.
func Ranges(pre, post []byte) []ledger.Range {
	if len(pre) > MaxDiffBytes || len(post) > MaxDiffBytes {
		return WholeFile(post)
	}
	// Only the lines between the shared head and tail can differ; diffing
	// just those keeps a one-line edit of a large file from splitting and
	// comparing every line of both versions.
	head, tail := sharedLines(pre, post)
	return diffRanges(pre, post, head, tail)
}

// diffRanges is Ranges with the diff limited to the lines after head
// bytes and before the last tail bytes (whole lines both versions share).
func diffRanges(pre, post []byte, head, tail int) []ledger.Range {
	edits := udiff.Lines(string(pre[head:len(pre)-tail]), string(post[head:len(post)-tail]))
	var out []ledger.Range
	delta := head
	for _, e := range edits {
		start := e.Start + delta
		delta += len(e.New) - (e.End - e.Start)
		if e.New == "" {
			continue
		}
		first := bytes.Count(post[:start], []byte{'\n'}) + 1
		last := first + strings.Count(strings.TrimSuffix(e.New, "\n"), "\n")
		if n := len(out); n > 0 && out[n-1].EndLine >= first-1 {
			first = out[n-1].StartLine
			out = out[:n-1]
		}
		out = append(out, ledger.Range{StartLine: first, EndLine: last})
	}
	for i := range out {
		out[i].ContentHash = hashLines(post, out[i].StartLine, out[i].EndLine)
	}
	return out
}

// sharedLines returns the lengths of the longest head and tail of whole
// lines that pre and post share, not overlapping in either.
func sharedLines(pre, post []byte) (head, tail int) {
	n := min(len(pre), len(post))
	for head < n && pre[head] == post[head] {
		head++
	}
	if head == len(pre) && head == len(post) {
		return head, 0 // identical
	}
	head = bytes.LastIndexByte(pre[:head], '\n') + 1 // whole lines only
	for tail < n-head && pre[len(pre)-1-tail] == post[len(post)-1-tail] {
		tail++
	}
	// The tail must start a line in both versions. Its bytes are shared,
	// so after the first newline inside it, it does.
	for tail > 0 {
		a, b := len(pre)-tail, len(post)-tail
		if (a == 0 || pre[a-1] == '\n') && (b == 0 || post[b-1] == '\n') {
			break
		}
		i := bytes.IndexByte(pre[a:], '\n')
		if i < 0 {
			return head, 0
		}
		tail -= i + 1
	}
	return head, tail
}

// WholeFile is the range of every line of content (none if empty).
func WholeFile(content []byte) []ledger.Range {
	n := bytes.Count(content, []byte{'\n'})
	if len(content) > 0 && content[len(content)-1] != '\n' {
		n++
	}
	if n == 0 {
		return nil
	}
	s := sha256.Sum256(content)
	return []ledger.Range{{StartLine: 1, EndLine: n, ContentHash: "sha256:" + hex.EncodeToString(s[:])}}
}

// hashLines hashes lines first..last (1-based, inclusive) of content.
func hashLines(content []byte, first, last int) string {
	start := skipLines(content, 0, first-1)
	end := skipLines(content, start, last-first+1)
	s := sha256.Sum256(content[start:end])
	return "sha256:" + hex.EncodeToString(s[:])
}

// skipLines returns the offset n lines after off, or the end of content.
func skipLines(content []byte, off, n int) int {
	for ; n > 0 && off < len(content); n-- {
		i := bytes.IndexByte(content[off:], '\n')
		if i < 0 {
			return len(content)
		}
		off += i + 1
	}
	return off
}

var configExt = []string{".yaml", ".yml", ".json", ".toml", ".ini", ".cfg", ".conf", ".env", ".properties", ".lock", ".xml", ".plist", ".hcl", ".tf"}
var configNames = []string{"Dockerfile", "Containerfile", "Makefile", "go.mod", "go.sum", "requirements.txt", "Pipfile", "Gemfile",
	".gitignore", ".gitattributes", ".editorconfig", ".dockerignore", ".npmrc", ".intentignore", "docker-compose.yml", "Procfile"}
var docExt = []string{".md", ".markdown", ".rst", ".txt", ".adoc", ".asciidoc", ".org"}

// IsConfiguration reports whether p is a configuration file by its name.
func IsConfiguration(p string) bool {
	base := path.Base(p)
	return slices.Contains(configNames, base) || strings.HasPrefix(base, "Dockerfile") || strings.HasPrefix(base, ".env") ||
		slices.Contains(configExt, strings.ToLower(path.Ext(base)))
}

// IsDocumentation reports whether p is a documentation file by its name.
func IsDocumentation(p string) bool {
	base := path.Base(p)
	return slices.Contains(docExt, strings.ToLower(path.Ext(base))) || strings.HasPrefix(strings.ToUpper(base), "README") ||
		strings.HasPrefix(strings.ToUpper(base), "LICENSE") || strings.HasPrefix(strings.ToUpper(base), "CHANGELOG")
}

// Classify names the kind of a content change of p from pre to post.
// declared is what the agent announced for its writes ("" for nothing).
func Classify(p string, pre, post []byte, declared ledger.MutationClass) ledger.MutationClass {
	if c := ClassByName(p, declared); c != ledger.ClassEvolution || declared != "" {
		return c // declared, or decided by the name alone
	}
	if commentsOrSpaceOnly(p, pre, post) {
		return ledger.ClassDocumentation
	}
	return ledger.ClassEvolution
}

// ClassByName is the mutation class of a change to p judged without its
// content (a binary, new or too large file): the declared class if there
// is one, else configuration or documentation by name, else evolution.
func ClassByName(p string, declared ledger.MutationClass) ledger.MutationClass {
	switch {
	case declared != "":
		return declared
	case IsConfiguration(p):
		return ledger.ClassConfiguration
	case IsDocumentation(p):
		return ledger.ClassDocumentation
	}
	return ledger.ClassEvolution
}

// commentsOrSpaceOnly reports whether only comments or whitespace changed:
// for Go by comparing token streams without comments, for other text by
// comparing it without whitespace.
func commentsOrSpaceOnly(p string, pre, post []byte) bool {
	if isGoChange(p, pre, post) {
		return sameGoTokens(pre, post)
	}
	return classifyText(p, pre, post) == ledger.ClassDocumentation
}

// isGoChange reports whether the change of p from pre to post is one
// of Go source whose tokens are compared.
func isGoChange(p string, pre, post []byte) bool {
	return strings.HasSuffix(p, ".go") && !bytes.Equal(pre, post) && len(pre) <= MaxDiffBytes && len(post) <= MaxDiffBytes
}

// classifyText classifies a change that is not compared as Go tokens:
// documentation when only whitespace changed in text, else evolution.
func classifyText(p string, pre, post []byte) ledger.MutationClass {
	if bytes.Equal(pre, post) || len(pre) > MaxDiffBytes || len(post) > MaxDiffBytes || strings.HasSuffix(p, ".go") {
		return ledger.ClassEvolution
	}
	if bytes.IndexByte(pre, 0) < 0 && bytes.Equal(stripSpace(pre), stripSpace(post)) {
		return ledger.ClassDocumentation
	}
	return ledger.ClassEvolution
}

func stripSpace(b []byte) []byte {
	return bytes.Join(bytes.Fields(b), nil)
}

// sameGoTokens reports whether two Go sources scan to the same tokens,
// comments aside, and both scan without error. Automatic semicolons are
// skipped so that reflowing a comment onto its own line does not count as
// a change.
//
// The bytes the two share at the start scan the same way in both, so
// they are scanned once, in a, up to the last token that starts well
// inside the shared prefix; from there the two are scanned side by side
// and compared as they go, so a code change stops the scan where it is.
func sameGoTokens(a, b []byte) bool {
	restart := goRestartPoint(a, commonPrefix(a, b))
	if restart < 0 {
		return false // a does not scan
	}
	return sameGoTokensFrom(a[restart:], b[restart:])
}

// scanLookahead is more than the bytes go/scanner reads past a token to
// end it, so a token that starts this far inside the shared prefix starts
// at the same offset in both sources.
const scanLookahead = 4

// goRestartPoint is the offset of the last token of src that starts at
// least scanLookahead bytes before limit (0 if none), or -1 if src has a
// scan error before it. A fresh scanner started there yields the tokens
// a scanner from the start would; only automatic semicolons, which the
// comparison skips, can differ.
func goRestartPoint(src []byte, limit int) int {
	var g goTokenScanner
	g.init(src)
	restart := 0
	for {
		pos, tok, _ := g.s.Scan()
		off := g.file.Offset(pos)
		if tok == token.EOF || off+scanLookahead > limit {
			break
		}
		if tok != token.SEMICOLON { // an automatic semicolon starts no token
			restart = off
		}
	}
	if g.bad {
		return -1
	}
	return restart
}

// sameGoTokensFrom compares two sources token by token, as scanned.
func sameGoTokensFrom(a, b []byte) bool {
	var sa, sb goTokenScanner
	sa.init(a)
	sb.init(b)
	for {
		ta, la := sa.next()
		tb, lb := sb.next()
		if ta != tb || la != lb {
			return false
		}
		if ta == token.EOF {
			return !sa.bad && !sb.bad
		}
	}
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// goTokenScanner yields Go tokens without comments or automatic
// semicolons.
type goTokenScanner struct {
	s    scanner.Scanner
	file *token.File
	bad  bool
}

func (g *goTokenScanner) init(src []byte) {
	g.file = token.NewFileSet().AddFile("", 1, len(src))
	g.s.Init(g.file, src, func(token.Position, string) { g.bad = true }, 0)
}

func (g *goTokenScanner) next() (token.Token, string) {
	for {
		_, tok, lit := g.s.Scan()
		if tok == token.SEMICOLON && lit == "\n" {
			continue
		}
		return tok, lit
	}
}
