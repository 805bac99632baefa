package policy

import "testing"

func TestScopeOwnsChildOf(t *testing.T) {
	tests := []struct {
		scope []string
		dir   string
		want  bool
	}{
		{[]string{"README.md"}, "", true},
		{[]string{"README.md"}, "docs", false},
		{[]string{"docs/guide.md"}, "docs", true},
		{[]string{"docs/guide.md"}, "", false},
		{[]string{"docs/guide.md"}, "docs/sub", false},
		{[]string{"src/*.go"}, "src", true},
		{[]string{"src/*.go"}, "", false},
		{[]string{"src/*.go"}, "src/sub", false},
		{[]string{"src/*.go"}, "lib", false},
		{[]string{"docs/**"}, "docs", true},
		{[]string{"docs/**"}, "docs/a/b", true},
		{[]string{"docs/**"}, "", false}, // "docs" is a directory there
		{[]string{"docs/**"}, "src", false},
		{[]string{"**"}, "", true},
		{[]string{"**"}, "any/where", true},
		{[]string{"src/**/*.go"}, "src", true},
		{[]string{"src/**/*.go"}, "src/a/b", true},
		{[]string{"src/**/*.go"}, "", false},
		{[]string{"*/x.go"}, "pkg", true},
		{[]string{"*/x.go"}, "pkg/sub", false},
		{[]string{"{a,b}/x"}, "b", true},
		{[]string{"{a,b}/x"}, "c", false},
		{[]string{"{a/b,c}/x"}, "a/b", false}, // a "/" inside braces: owns nothing
		{[]string{"lib/x", "src/*.go"}, "src", true},
	}
	for _, tt := range tests {
		s := newScopeSet(tt.scope)
		if got := s.ownsChildOf(tt.dir); got != tt.want {
			t.Errorf("scope %v ownsChildOf(%q) = %v, want %v", tt.scope, tt.dir, got, tt.want)
		}
	}
}

func TestProvisional(t *testing.T) {
	intents := &Intents{byID: map[string]*Intent{
		"I-1": {ID: "I-1", Status: StatusInProgress, OwnedScope: []string{"README.md", "src/*.go"}, scope: newScopeSet([]string{"README.md", "src/*.go"})},
		"I-2": {ID: "I-2", Status: StatusBlocked, OwnedScope: []string{"README.md"}, scope: newScopeSet([]string{"README.md"})},
	}}
	s := &Snapshot{Intents: intents, Ignore: &Ignore{}}
	tests := []struct {
		name string
		req  Request
		want bool
	}{
		{"a temporary beside an owned file", Request{Op: OpCreate, Path: "sedAB12", Intent: "I-1"}, true},
		{"a temporary beside an owned glob", Request{Op: OpCreate, Path: "src/.util.go.tmp", Intent: "I-1"}, true},
		{"a Makefile beside an owned file", Request{Op: OpCreate, Path: "Makefile", Intent: "I-1"}, true},
		{"a directory owning nothing", Request{Op: OpCreate, Path: "docs/sedAB12", Intent: "I-1"}, false},
		{"a subdirectory of a glob's", Request{Op: OpCreate, Path: "src/sub/x.tmp", Intent: "I-1"}, false},
		{"a directory", Request{Op: OpCreate, Path: "tmpdir", IsDir: true, Intent: "I-1"}, false},
		{"the policy", Request{Op: OpCreate, Path: ".orchestration/x", Intent: "I-1"}, false},
		{"the ignore file", Request{Op: OpCreate, Path: ".intentignore", Intent: "I-1"}, false},
		{"a .gitignore", Request{Op: OpCreate, Path: "src/.gitignore", Intent: "I-1"}, false},
		{"git's directory", Request{Op: OpCreate, Path: ".git/hooks/pre-commit", Intent: "I-1"}, false},
		{"an intent not in progress", Request{Op: OpCreate, Path: "sedAB12", Intent: "I-2"}, false},
		{"no intent", Request{Op: OpCreate, Path: "sedAB12"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := s.Decide(tt.req)
			if got := s.Provisional(tt.req, d); got != tt.want {
				t.Errorf("Provisional(%+v) with decision %s = %v, want %v", tt.req, d.Code, got, tt.want)
			}
		})
	}
}
