package accept

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
)

func TestClean(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "src/a.go", want: "src/a.go"},
		{in: "./src//a.go", want: "src/a.go"},
		{in: "", err: "not the workspace"},
		{in: ".", err: "not the workspace"},
		{in: "../x", err: "not inside the workspace"},
		{in: "/etc/passwd", err: "not inside the workspace"},
		{in: ".git/config", err: "not governed"},
		{in: ".orchestration/agent_trace.jsonl", err: "not governed"},
		{in: "src/../.orchestration/x", err: "not governed"},
	}
	for _, tt := range tests {
		got, err := Clean(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Clean(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Clean(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	many := make([]string, MaxPaths+1)
	for i := range many {
		many[i] = "f"
	}
	tests := []struct {
		name string
		req  Request
		err  string
	}{
		{"ok", Request{Paths: []string{"a"}, Reason: "mine"}, ""},
		{"no paths", Request{}, "at least one path"},
		{"too many", Request{Paths: many}, "at most"},
		{"long reason", Request{Paths: []string{"a"}, Reason: strings.Repeat("x", MaxReasonBytes+1)}, "keep it under"},
		{"bad path", Request{Paths: []string{"a", "../b"}}, "not inside"},
	}
	for _, tt := range tests {
		err := Validate(tt.req)
		if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: Validate = %v, want %q", tt.name, err, tt.err)
		}
	}
}

func TestDescribe(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte("one\ntwo\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(src, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f.txt", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	who := Who{Uid: 1000, Name: "alice"}
	now := time.Now()
	tests := []struct {
		path     string
		wantHash string
		wantMode string
		reason   string
		err      string
	}{
		{path: "f.txt", wantHash: ledger.HashBytes([]byte("one\ntwo\n")), wantMode: "0640", reason: "accepted by alice (uid 1000) as "},
		{path: "gone.txt", reason: "accepted by alice (uid 1000) as absent: why"},
		{path: "dir", err: "is a directory"},
		{path: "link", err: "symlink"},
		{path: "link/x", err: "symlink"},
	}
	for _, tt := range tests {
		c, res, err := Describe(src, tt.path, who, " why ", now)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Describe(%s) = %+v, %v; want an error with %q", tt.path, c, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Describe(%s): %v", tt.path, err)
		}
		if c.Event != ledger.EventAccept || c.PostHash != tt.wantHash || res.Hash != tt.wantHash || c.Mode != tt.wantMode ||
			!strings.Contains(c.Reason, tt.reason) || !strings.HasSuffix(c.Reason, ": why") {
			t.Errorf("Describe(%s) = %+v, %+v", tt.path, c, res)
		}
		rec := ledger.NewRecord(c, "test")
		if err := ledger.CheckRecord(rec); err != nil || rec.Files[0].Conversations[0].Contributor.Type != "human" {
			t.Errorf("the record of %s: %v, %+v", tt.path, err, rec.Files)
		}
	}
}
