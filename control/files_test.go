package control

import (
	"context"
	"strings"
	"testing"
)

func TestOneValue(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    string
		wantErr string
	}{
		{name: "echo", data: "INT-001\n", want: "INT-001"},
		{name: "printf", data: "INT-001", want: "INT-001"},
		{name: "none deselects", data: "none\n", want: ""},
		{name: "two ids", data: "INT-001\nINT-002\n", wantErr: "exactly one value"},
		{name: "two newlines", data: "INT-001\n\n", wantErr: "exactly one value"},
		{name: "empty line", data: "\n", wantErr: "empty write"},
		{name: "empty", data: "", wantErr: "empty write"},
		{name: "spaces", data: " INT-001\n", wantErr: "exactly one value"},
		{name: "crlf", data: "INT-001\r\n", wantErr: "exactly one value"},
		{name: "a command", data: "rm -rf /\n", wantErr: "exactly one value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := oneValue([]byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("oneValue(%q) = %q, %v; want an error containing %q", tt.data, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("oneValue(%q) = %q, %v; want %q", tt.data, got, err, tt.want)
			}
		})
	}
}

func TestParseCheckQuestion(t *testing.T) {
	tests := []struct {
		data, op, path, wantErr string
	}{
		{data: "src/a.go", path: "src/a.go"},
		{data: "create src/a.go\n", op: "create", path: "src/a.go"},
		{data: "my notes.txt", path: "my notes.txt"},
		{data: "rename src/a.go", wantErr: "rename needs both of its paths"},
		{data: "link src/a.go", wantErr: "link needs both"},
		{data: "a\nb", wantErr: "one line"},
	}
	for _, tt := range tests {
		op, path, err := parseCheckQuestion([]byte(tt.data))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseCheckQuestion(%q) = %q %q %v, want an error with %q", tt.data, op, path, err, tt.wantErr)
			}
			continue
		}
		if err != nil || op != tt.op || path != tt.path {
			t.Errorf("parseCheckQuestion(%q) = %q %q %v, want %q %q", tt.data, op, path, err, tt.op, tt.path)
		}
	}
}

// TestCheckAnswerReadsPastTheQuestionLength: an answer longer than one
// read comes back whole to a pread reader (offsets from 0) and to a
// sequential one (offsets from just past the question) alike.
func TestCheckAnswerReadsPastTheQuestionLength(t *testing.T) {
	answer := []byte(strings.Repeat("0123456789abcdef", 200))
	f := &checkFile{}
	for _, start := range []int64{0, 24} {
		h := &checkHandle{answer: answer, base: 24}
		var got []byte
		for off := start; ; {
			dest := make([]byte, 512)
			rr, errno := f.Read(context.Background(), h, dest, off)
			if errno != 0 {
				t.Fatal(errno)
			}
			b, _ := rr.Bytes(dest)
			if len(b) == 0 {
				break
			}
			got = append(got, b...)
			off += int64(len(b))
		}
		if string(got) != string(answer) {
			t.Errorf("reads from offset %d: got %d bytes, want the %d of the answer", start, len(got), len(answer))
		}
	}
}
