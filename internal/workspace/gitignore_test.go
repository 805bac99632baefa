package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteGitignore(t *testing.T) {
	dir := t.TempDir()
	p, err := At(dir).WriteGitignore()
	if err != nil || p != filepath.Join(dir, GitignoreFile) {
		t.Fatalf("first write: %q %v", p, err)
	}
	b, _ := os.ReadFile(p)
	for _, want := range []string{"/agent_trace.jsonl\n", "/agent_trace.*.jsonl\n", "/agent_trace.jsonl.torn\n", "/objects/\n", "/.intentfs.lock\n", ".*.tmp-*\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the .gitignore lacks %q:\n%s", want, b)
		}
	}
	for _, kept := range []string{"active_intents.yaml", "intent_map.md", "CLAUDE.md"} {
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "#") && strings.Contains(line, kept) {
				t.Errorf("%s, which belongs in the repository, is ignored by %q", kept, line)
			}
		}
	}
	os.WriteFile(p, []byte("mine\n"), 0o644)
	if p2, err := At(dir).WriteGitignore(); err != nil || p2 != "" {
		t.Fatalf("second write: %q %v", p2, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "mine\n" {
		t.Fatalf("an existing .gitignore was overwritten: %q", b)
	}
}
