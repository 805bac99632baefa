package control

import (
	"strings"
	"testing"
)

func TestParseScopeRequest(t *testing.T) {
	paths, why, err := ParseScopeRequest([]byte("paths: docs/** src/x.go\npaths: notes.md\nwhy: the API needs its page\n"))
	if err != nil || strings.Join(paths, " ") != "docs/** src/x.go notes.md" || why != "the API needs its page" {
		t.Fatalf("= %q %q %v", paths, why, err)
	}
	for in, want := range map[string]string{
		"why: x\n":                                        "no `paths:` line",
		"paths: a\n":                                      "no `why:` line",
		"paths: /etc/passwd\nwhy: x\n":                    "relative to the workspace root",
		"paths: ../up\nwhy: x\n":                          "may not climb out",
		"paths: a\nwhy: x\nplease\n":                      "unknown line",
		"paths: a\nwhy: x\x1b[2J\n":                       "control characters",
		"paths: a\nwhy: " + strings.Repeat("w", 2000):     "keep it under",
		"paths: " + strings.Repeat("a ", 17) + "\nwhy: x": "at most 16",
		"paths: a\xff\nwhy: x\n":                          "not text",
	} {
		if _, _, err := ParseScopeRequest([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseScopeRequest(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestPartialScopeRequest(t *testing.T) {
	tests := []struct {
		data    string
		partial bool
	}{
		{"paths: docs/** src/cache.go\n", true}, // bash's first write
		{"why: the cache needs a page\n", true},
		{"paths: docs/**\nwhy: a page\n", false}, // complete: applied at once
		{"", false},
		{"\n", false},
		{"paths: docs/**\nbogus: x\n", false}, // malformed: refused at once
		{"hello\n", false},
		{"paths: a\xff\n", false},
	}
	for _, tt := range tests {
		if got := partialScopeRequest([]byte(tt.data)); got != tt.partial {
			t.Errorf("partialScopeRequest(%q) = %v, want %v", tt.data, got, tt.partial)
		}
	}
}
