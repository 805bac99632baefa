package main

import (
	"os/exec"
	"strings"
	"testing"
)

func TestCheckAttribution(t *testing.T) {
	tests := []struct {
		model, conversation string
		ok                  bool
	}{
		{"", "", true},
		{"anthropic/claude-opus-4-5", "https://example.com/c/42", true},
		{"openai/gpt-5", "urn:conversation:42", true},
		{string(make([]byte, 251)), "", false},
		{"bad\nmodel", "", false},
		{"", "not a url", false},
		{"", "/relative/path", false},
		{"", "https://", false},
	}
	for _, tt := range tests {
		if err := checkAttribution(tt.model, tt.conversation); (err == nil) != tt.ok {
			t.Errorf("checkAttribution(%q, %q) = %v, want ok=%v", tt.model, tt.conversation, err, tt.ok)
		}
	}
}

// TestDemoExitNote: the demo says "exit status 2" once, not
// "exit status: exit status 2".
func TestDemoExitNote(t *testing.T) {
	var out strings.Builder
	demoShell(&out, t.TempDir(), "exit 2")
	if got := out.String(); !strings.Contains(got, "   (exit status 2)\n") || strings.Count(got, "exit status") != 1 {
		t.Errorf("demo printed:\n%s", got)
	}
	demoShell(&out, t.TempDir(), "true")
	if strings.Count(out.String(), "exit status") != 1 {
		t.Errorf("a success got an exit note:\n%s", out.String())
	}
	if got := exitNote(exec.ErrNotFound); !strings.HasPrefix(got, "could not run: ") {
		t.Errorf("exitNote(ErrNotFound) = %q", got)
	}
}
