package policy

import (
	"strings"
	"testing"
)

func TestCrossing(t *testing.T) {
	s := testSnapshot(t, false)
	tests := []struct {
		name     string
		from, to string
		isDir    bool
		want     Crossing
	}{
		{"governed to governed", "src/api/a", "src/api/b", false, CrossNone},
		{"exempt to exempt", "build/a", "build/b", false, CrossNone},
		{"file into an ignored directory", "src/api/c.txt", "build/c.txt", false, CrossOut},
		{"directory into an ignored directory", "src/api/bulk", "build/bulk", true, CrossOut},
		{"the ignored directory's own name", "src/api/bulk", "build", true, CrossOut},
		{"onto an ignored pattern", "src/api/x", "src/api/x.lock", false, CrossOut},
		{"into git's object store", "src/api/x", ".git/objects/ab/cd", false, CrossOut},
		{"out of an ignored directory", "build/c.txt", "src/api/c.txt", false, CrossIn},
		{"from git's object store", ".git/objects/ab/cd", "src/api/x", false, CrossIn},
		{"git config is governed, not exempt", ".git/config", "src/api/x", false, CrossNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Crossing(tt.from, tt.to, tt.isDir); got != tt.want {
				t.Fatalf("Crossing(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
			}
		})
	}
}

// TestMoveOutDecidedAsRemoval: a move out of the governed tree is decided
// on its governed side as the removal of what it takes along: allowed
// where the scope allows deleting it, refused where it does not; the
// exempt side is not decided. A move in is decided as a write of its
// destination. An exchange across the edge is refused whatever the scope.
func TestMoveOutDecidedAsRemoval(t *testing.T) {
	s := testSnapshot(t, false)
	tests := []struct {
		name string
		req  Request
		code Code
	}{
		{"file in scope out", Request{Op: OpRename, Path: "src/api/c.txt", Path2: "build/c.txt"}, CodeAllowed},
		{"file out of scope out", Request{Op: OpRename, Path: "main.go", Path2: "build/main.go"}, CodeOutOfScope},
		{"directory in scope out", Request{Op: OpRename, Path: "src/api/bulk", Path2: "build/bulk", IsDir: true}, CodeAllowed},
		{"directory partly in scope out", Request{Op: OpRename, Path: "src", Path2: "build/src", IsDir: true}, CodeOutOfScope},
		{"file in, destination in scope", Request{Op: OpRename, Path: "build/c.txt", Path2: "src/api/c.txt"}, CodeAllowed},
		{"file in, destination out of scope", Request{Op: OpRename, Path: "build/c.txt", Path2: "docs/c.txt"}, CodeOutOfScope},
		{"exchange across, both sides in scope", Request{Op: OpRename, Path: "src/api/c.txt", Path2: "build/c.txt", RenameFlags: RenameExchange}, CodeOutOfScope},
		{"exchange across, exempt side first", Request{Op: OpRename, Path: "build/c.txt", Path2: "src/api/c.txt", RenameFlags: RenameExchange}, CodeOutOfScope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Intent = "INT-001"
			d := s.Decide(tt.req)
			if d.Code != tt.code {
				t.Fatalf("code = %s (%s), want %s", d.Code, d.Reason, tt.code)
			}
			if tt.req.RenameFlags&RenameExchange != 0 {
				if !d.Binding || !strings.Contains(d.Reason, "RENAME_EXCHANGE") || !strings.Contains(d.Reason, "src/api/c.txt (governed)") {
					t.Fatalf("exchange refusal = %+v, want a binding refusal naming the governed side", d)
				}
			}
		})
	}
}
