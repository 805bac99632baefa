package main

import "testing"

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
