package gitchange

import (
	"testing"

	"github.com/intentfs/intentfs/policy"
)

func TestTouches(t *testing.T) {
	tests := []struct {
		name string
		req  policy.Request
		want bool
	}{
		{"a source file", policy.Request{Op: policy.OpOpenWrite, Path: "src/a.go"}, false},
		{"a ref", policy.Request{Op: policy.OpOpenWrite, Path: ".git/refs/heads/main"}, true},
		{"the .git entry itself", policy.Request{Op: policy.OpRmdir, Path: ".git"}, true},
		{"a nested repository's index", policy.Request{Op: policy.OpOpenWrite, Path: "sub/.git/index"}, true},
		{"a name that only starts like .git", policy.Request{Op: policy.OpOpenWrite, Path: ".gitignore"}, false},
		{"a rename onto a ref", policy.Request{Op: policy.OpRename, Path: "tmp/x", Path2: ".git/HEAD"}, true},
		{"a rename out of the git directory", policy.Request{Op: policy.OpRename, Path: ".git/x", Path2: "src/x"}, true},
		{"a rename between source files", policy.Request{Op: policy.OpRename, Path: "src/a", Path2: "src/b"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Touches(tt.req); got != tt.want {
				t.Errorf("Touches(%+v) = %v, want %v", tt.req, got, tt.want)
			}
		})
	}
}
