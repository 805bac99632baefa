package docsrun

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
)

// markKind is what the comment before a block says the tests do with it.
type markKind string

const (
	markNone       markKind = ""
	markRun        markKind = "run"
	markTranscript markKind = "transcript"
	markSkip       markKind = "skip"
)

// block is one fenced code block of a markdown file.
type block struct {
	file   string // relative to the module root
	line   int    // the fence's line, from 1
	lang   string
	body   string // the lines between the fences, the fence's indentation removed
	mark   markKind
	reason string // for markSkip
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// firstLine is the block's first non-blank line, trimmed.
func (b block) firstLine() string {
	for _, l := range strings.Split(b.body, "\n") {
		if s := strings.TrimSpace(l); s != "" {
			return s
		}
	}
	return ""
}

var (
	fenceRe  = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^\\s`]*)")
	markerRe = regexp.MustCompile(`^\s*<!--\s*docs-test:\s*(run|transcript|skip)\b\s*(?:[—–:-]+\s*)?(.*?)\s*-->\s*$`)
)

// parseBlocks returns the fenced blocks of a markdown text with the
// docs-test marker on the last non-blank line before each opening fence.
func parseBlocks(file, text string) ([]block, error) {
	lines := strings.Split(text, "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		m := fenceRe.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, fence := m[1], m[2]
		b := block{file: file, line: i + 1, lang: m[3]}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if mm := markerRe.FindStringSubmatch(lines[j]); mm != nil {
				b.mark, b.reason = markKind(mm[1]), mm[2]
			} else if strings.Contains(lines[j], "docs-test") {
				return nil, fmt.Errorf("%s:%d: a docs-test comment that is not one of <!-- docs-test: run -->, <!-- docs-test: transcript -->, <!-- docs-test: skip — REASON -->", file, j+1)
			}
			break
		}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), fence[:3]) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(lines[i]), fence[:1])) == "" {
				closed = true
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: a code block that is never closed", file, b.line)
		}
		b.body = strings.Join(body, "\n")
		out = append(out, b)
	}
	return out, nil
}

// isCommandWord reports whether an untagged block starting with word
// is a block of commands a reader would type.
func isCommandWord(word string) bool {
	switch word {
	case "intentfs", "sudo", "go", "git", "docker", "podman", "cd", "echo", "cat",
		"printf", "mkdir", "cp", "export", "npx", "claude", "INTENTFS":
		return true
	}
	return false
}

// runnable reports whether a reader would type the block: a shell
// language, or an untagged block that starts with a command or shows a
// "$ " prompt.
func (b block) runnable() bool {
	switch b.lang {
	case "sh", "bash", "shell", "console":
		return true
	case "":
	default:
		return false
	}
	for _, l := range strings.Split(b.body, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "$ ") {
			return true
		}
	}
	first := strings.Fields(b.firstLine())
	if len(first) == 0 {
		return false
	}
	word, _, _ := strings.Cut(first[0], "=")
	return isCommandWord(word)
}

// docFiles are the markdown files whose blocks are checked, relative to
// the module root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md", "SECURITY.md"}
	manual, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(manual) == 0 {
		t.Fatal("docs/ holds no markdown file")
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

// moduleRoot is the directory of the module the tests run in.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.ModuleFile()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// allBlocks reads every doc file's runnable blocks.
func allBlocks(t *testing.T) map[string][]block {
	t.Helper()
	root := moduleRoot(t)
	out := map[string][]block{}
	for _, f := range docFiles(t, root) {
		text, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		bs, err := parseBlocks(f, string(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.runnable() || b.mark != markNone {
				out[f] = append(out[f], b)
			}
		}
	}
	return out
}

// TestEveryDocCommandBlockIsRunOrMarked holds the docs to the rule of
// the package comment: every block a reader would type is run by
// TestDocPages or says why not, and the page scenarios run exactly the
// blocks marked run or transcript, in the order of the page.
func TestEveryDocCommandBlockIsRunOrMarked(t *testing.T) {
	scenarios := map[string]page{}
	for _, p := range docPages() {
		if _, dup := scenarios[p.file]; dup {
			t.Errorf("two scenarios for %s", p.file)
		}
		scenarios[p.file] = p
	}
	for file, bs := range allBlocks(t) {
		var marked []block
		for _, b := range bs {
			switch {
			case b.mark == markNone:
				t.Errorf("%s: a %q block a reader would run is neither run by a test nor marked: put <!-- docs-test: run -->, <!-- docs-test: transcript --> (and a step in integration/docsrun/pages_test.go) or <!-- docs-test: skip — REASON --> on the line before its fence (first line: %q)", b, b.lang, b.firstLine())
			case b.mark == markSkip && len(b.reason) < 10:
				t.Errorf("%s: a skip marker without a reason: say why the block is not run and what covers it", b)
			case b.mark == markTranscript && !strings.Contains(b.body, "$ "):
				t.Errorf("%s: a transcript block without a \"$ \" command line", b)
			case b.mark == markRun || b.mark == markTranscript:
				marked = append(marked, b)
			}
		}
		p, ok := scenarios[file]
		if !ok {
			for _, b := range marked {
				t.Errorf("%s: marked %s, but no scenario in integration/docsrun/pages_test.go runs %s", b, b.mark, file)
			}
			continue
		}
		if _, err := p.plan(marked); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		delete(scenarios, file)
	}
	for file := range scenarios {
		t.Errorf("a scenario for %s, which has no block to run", file)
	}
}

// transcriptCmd is one "$ " command of a transcript with the output the
// doc shows for it.
type transcriptCmd struct {
	cmd  string
	want []string // nil: not shown
}

// parseTranscript splits a transcript block into its commands; a line
// ending in a backslash continues the command.
func parseTranscript(body string) []transcriptCmd {
	var out []transcriptCmd
	lines := strings.Split(body, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "$ ") {
			cmd := strings.TrimPrefix(l, "$ ")
			for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
				i++
				cmd = strings.TrimSuffix(cmd, "\\") + "\n" + lines[i]
			}
			out = append(out, transcriptCmd{cmd: cmd})
			continue
		}
		if l == "" || len(out) == 0 {
			continue
		}
		out[len(out)-1].want = append(out[len(out)-1].want, lines[i])
	}
	return out
}

const durationUnit = `(?:ns|µs|us|ms|s|m|h)`

var (
	tokenRe    = regexp.MustCompile(`\.\.\.|…|\s+|\b(?:[0-9]+(?:\.[0-9]+)?` + durationUnit + `)+\b|[0-9a-f]{6,}|[0-9]+`)
	durationRe = regexp.MustCompile(`^(?:[0-9]+(?:\.[0-9]+)?` + durationUnit + `)+$`)
)

// lineRegexp turns a line of expected output into the regexp of the
// matching rule in the package comment.
func lineRegexp(want string) *regexp.Regexp {
	var sb strings.Builder
	sb.WriteString("^")
	want = strings.TrimSpace(want)
	last := 0
	for _, loc := range tokenRe.FindAllStringIndex(want, -1) {
		sb.WriteString(regexp.QuoteMeta(want[last:loc[0]]))
		tok := want[loc[0]:loc[1]]
		switch {
		case tok == "..." || tok == "…":
			sb.WriteString(".*")
		case strings.TrimSpace(tok) == "":
			sb.WriteString(`\s+`)
		case durationRe.MatchString(tok):
			sb.WriteString(`(?:[0-9]+(?:\.[0-9]+)?` + durationUnit + `)+`)
		case strings.Trim(tok, "0123456789") == "":
			sb.WriteString(`[0-9]+`)
		case strings.ContainsAny(tok, "0123456789"):
			sb.WriteString(`[0-9a-f]*[0-9][0-9a-f]*`)
		default:
			sb.WriteString(regexp.QuoteMeta(tok))
		}
		last = loc[1]
	}
	sb.WriteString(regexp.QuoteMeta(want[last:]))
	sb.WriteString("$")
	return regexp.MustCompile(sb.String())
}

// outputMatches reports whether got (the command's output) matches want
// (the doc's lines) by the rule in the package comment.
func outputMatches(want []string, got string) bool {
	var w, g []string
	for _, l := range want {
		if strings.TrimSpace(l) != "" {
			w = append(w, l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.TrimSpace(l) != "" {
			g = append(g, strings.TrimSpace(l))
		}
	}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if i == len(w) {
			return j == len(g)
		}
		if s := strings.TrimSpace(w[i]); s == "..." || s == "…" {
			for k := j; k <= len(g); k++ {
				if match(i+1, k) {
					return true
				}
			}
			return false
		}
		return j < len(g) && lineRegexp(w[i]).MatchString(g[j]) && match(i+1, j+1)
	}
	return match(0, 0)
}

func TestOutputMatches(t *testing.T) {
	tests := []struct {
		name string
		want []string
		got  string
		ok   bool
	}{
		{"same", []string{"OK: 7 records"}, "OK: 7 records\n", true},
		{"numbers differ", []string{"OK: 7 records in 0s"}, "OK: 12 records in 3s", true},
		{"durations differ", []string{"in 0s, waiting 1m59s"}, "in 1.5ms, waiting 12s", true},
		{"a duration is not a word", []string{"in 0s"}, "in 0 s", false},
		{"words differ", []string{"OK: 7 records"}, "FAILED: 7 records", false},
		{"hash differs", []string{"accepted a.txt: 8b0b06c1c94b, mode 0644"}, "accepted a.txt: 0f3e11aa9d02, mode 0644", true},
		{"hex word without digits is literal", []string{"decade"}, "facade", false},
		{"columns", []string{"ID  WHAT    PATH"}, "ID WHAT PATH", true},
		{"elision in a line", []string{"denied ...: outside"}, "denied docs/a.md: outside", true},
		{"unicode elision", []string{"a … z"}, "a b c z", true},
		{"elided lines", []string{"first", "...", "last"}, "first\nx\ny\nlast", true},
		{"elided nothing", []string{"first", "...", "last"}, "first\nlast", true},
		{"extra line", []string{"first"}, "first\nsecond", false},
		{"missing line", []string{"first", "second"}, "first", false},
		{"blank lines ignored", []string{"a", "", "b"}, "a\nb\n\n", true},
		{"regexp characters are literal", []string{"a.b (c)"}, "axb (c)", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := outputMatches(tc.want, tc.got); got != tc.ok {
				t.Errorf("outputMatches(%q, %q) = %v, want %v", tc.want, tc.got, got, tc.ok)
			}
		})
	}
}

func TestParseBlocksMarkers(t *testing.T) {
	text := "text\n<!-- docs-test: skip — needs a second machine -->\n```sh\nintentfs x\n```\n\n<!-- docs-test: run -->\n\n  ```\n  $ intentfs y\n  out\n  ```\n```yaml\na: b\n```\n```\nplain output\n```\n"
	bs, err := parseBlocks("f.md", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 4 {
		t.Fatalf("%d blocks, want 4: %+v", len(bs), bs)
	}
	if bs[0].mark != markSkip || bs[0].reason != "needs a second machine" || !bs[0].runnable() {
		t.Errorf("first block: %+v", bs[0])
	}
	if bs[1].mark != markRun || bs[1].body != "$ intentfs y\nout" || !bs[1].runnable() {
		t.Errorf("second block: %+v", bs[1])
	}
	if bs[2].runnable() || bs[3].runnable() {
		t.Errorf("yaml and plain output count as commands: %+v %+v", bs[2], bs[3])
	}
	if _, err := parseBlocks("f.md", "<!-- docs-test: sometimes -->\n```sh\nx\n```\n"); err == nil {
		t.Error("an unknown marker was accepted")
	}
	got := parseTranscript("$ a \\\n  --b\nout1\n\n$ c\n")
	if len(got) != 2 || got[0].cmd != "a \n  --b" || len(got[0].want) != 1 || got[1].want != nil {
		t.Errorf("parseTranscript: %+v", got)
	}
}

func TestPagePlanKeepsScenarioAndPageInStep(t *testing.T) {
	marked := []block{
		{file: "p.md", line: 3, body: "intentfs init ./repo", mark: markRun},
		{file: "p.md", line: 9, body: "$ intentfs status\nok", mark: markTranscript},
	}
	tests := []struct {
		name  string
		steps []step
		ok    bool
	}{
		{"in order", []step{{glue: "true"}, {doc: "intentfs init"}, {doc: "$ intentfs status"}}, true},
		{"out of order", []step{{doc: "$ intentfs status"}, {doc: "intentfs init"}}, false},
		{"a block without a step", []step{{doc: "intentfs init"}}, false},
		{"a step without a block", []step{{doc: "intentfs init"}, {doc: "$ intentfs status"}, {doc: "intentfs log"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			steps, err := page{file: "p.md", steps: tc.steps}.plan(marked)
			if (err == nil) != tc.ok {
				t.Fatalf("plan: %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && (steps[0].block != nil || steps[1].block.line != 3 || steps[2].block.line != 9) {
				t.Errorf("plan paired the steps wrongly: %+v", steps)
			}
		})
	}
}
