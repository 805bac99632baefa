package workspace

import (
	"os"
	"os/exec"
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
	// What git itself makes of it: intentfs's local state is ignored,
	// what belongs in the repository is not.
	if _, err := exec.LookPath("git"); err == nil {
		repo := t.TempDir()
		if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		if _, err := At(repo).WriteGitignore(); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			path    string
			ignored bool
		}{
			{".orchestration/agent_trace.jsonl", true},
			{".orchestration/agent_trace.jsonl.reserve", true},
			{".orchestration/agent_trace.3.jsonl", true},
			{".orchestration/.active_intents.yaml.lock", true},
			{".orchestration/.intentfs.lock", true},
			{".orchestration/objects/sha256/ab/cd", true},
			{".orchestration/active_intents.yaml", false},
			{".orchestration/intent_map.md", false},
			{".orchestration/CLAUDE.md", false},
			{".orchestration/.intentignore", false},
		} {
			err := exec.Command("git", "-C", repo, "check-ignore", "-q", "--no-index", tt.path).Run()
			if got := err == nil; got != tt.ignored {
				t.Errorf("git check-ignore %s: ignored = %v, want %v", tt.path, got, tt.ignored)
			}
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
