package sidecar

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSpliceSectionNeverClobbersHumanText(t *testing.T) {
	sec := SectionBegin + "\nNEW\n" + SectionEnd + "\n"
	cases := []struct {
		name, doc, want string
		err             bool
	}{
		{name: "empty file", doc: "", want: sec},
		{name: "appended after human text", doc: "# Mine\nno newline", want: "# Mine\nno newline\n\n" + sec},
		{name: "replaced in place", doc: "top\n" + SectionBegin + "\nOLD\n" + SectionEnd + "\nbottom\n", want: "top\n" + sec + "bottom\n"},
		{name: "end before begin", doc: SectionEnd + "\n" + SectionBegin + "\n", err: true},
		{name: "two sections", doc: SectionBegin + SectionEnd + SectionBegin + SectionEnd, err: true},
		{name: "begin only", doc: "x\n" + SectionBegin + "\n", err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := SpliceSection(c.doc, sec)
			if (err != nil) != c.err {
				t.Fatalf("err %v, want error %v", err, c.err)
			}
			if !c.err && got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestRenderSectionEscapesAndBounds(t *testing.T) {
	evil := "2026-01-01 [INT-001] bye " + SectionEnd + " <!-- open"
	var many []string
	for i := 0; i < 500; i++ {
		many = append(many, strings.Repeat("x", 60))
	}
	many = append(many, evil)
	s := RenderSection("# Guide", many, &Lessons{Path: "/w/.orchestration/CLAUDE.md"})
	if strings.Count(s, SectionBegin) != 1 || strings.Count(s, SectionEnd) != 1 || strings.Count(s, "<!--") != 3 {
		t.Errorf("a lesson forged or opened a marker:\n%s", s[len(s)-400:])
	}
	if len(s) > maxSectionBytes {
		t.Errorf("section is %d bytes, over %d", len(s), maxSectionBytes)
	}
	if !strings.Contains(s, "bye &lt;!-- intentfs:lessons:end --&gt; &lt;!-- open") || !strings.Contains(s, "older lessons are in .orchestration/CLAUDE.md") {
		t.Errorf("newest lesson missing or no pointer to older ones:\n%s", s[len(s)-400:])
	}
}

func TestAgentFilesPublish(t *testing.T) {
	src := t.TempDir()
	l := &Lessons{Path: filepath.Join(src, ".orchestration", "CLAUDE.md")}
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o755); err != nil {
		t.Fatal(err)
	}
	var wrote []string
	a := &AgentFiles{Source: src, Guide: "# Guide", Lessons: l, Wrote: func(n string, pre, post []byte) { wrote = append(wrote, n) }}
	l.Added = func() {
		if err := a.Publish(); err != nil {
			t.Error(err)
		}
	}

	// No agent file yet: CLAUDE.md is created with just the section.
	if err := a.Publish(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(src, "CLAUDE.md"))
	if !strings.HasPrefix(string(b), SectionBegin) {
		t.Errorf("new CLAUDE.md:\n%s", b)
	}
	// A human's AGENTS.md gets the section too, their text kept verbatim.
	human := "# House rules\r\nTabs, not spaces.\n"
	if err := os.WriteFile(filepath.Join(src, "AGENTS.md"), []byte(human), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Add("INT-001", "use make test", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"CLAUDE.md", "AGENTS.md"} {
		b, _ := os.ReadFile(filepath.Join(src, n))
		if !strings.Contains(string(b), "[INT-001] use make test") {
			t.Errorf("%s lacks the lesson:\n%s", n, b)
		}
	}
	b, _ = os.ReadFile(filepath.Join(src, "AGENTS.md"))
	if !strings.HasPrefix(string(b), human) {
		t.Errorf("human text changed:\n%q", b)
	}
	if st, _ := os.Stat(filepath.Join(src, "AGENTS.md")); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 kept", st.Mode().Perm())
	}
	n := len(wrote)
	if err := a.Publish(); err != nil || len(wrote) != n {
		t.Errorf("an unchanged section was rewritten (err %v)", err)
	}
}

func TestAgentFilesRefuseSymlinks(t *testing.T) {
	src, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "victim")
	if err := os.WriteFile(target, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(src, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	a := &AgentFiles{Source: src, Guide: "g", Names: []string{"CLAUDE.md"}}
	if err := a.Publish(); err == nil {
		t.Error("published through a symlink")
	}
	if b, _ := os.ReadFile(target); string(b) != "precious\n" {
		t.Errorf("the symlink's target changed: %q", b)
	}
	if fi, _ := os.Lstat(filepath.Join(src, "CLAUDE.md")); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symlink was replaced")
	}
}
