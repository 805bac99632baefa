package policy

import (
	"errors"
	"strings"
	"testing"
)

const decidePolicy = `active_intents:
  - id: INT-001
    name: api work
    status: IN_PROGRESS
    owned_scope: ["src/api/**", "README.md"]
  - id: INT-002
    name: pending work
    status: PENDING
    owned_scope: ["**"]
  - id: INT-003
    name: blocked work
    status: BLOCKED
    owned_scope: ["**"]
  - id: INT-004
    name: complete work
    status: COMPLETE
    owned_scope: ["**"]
  - id: INT-005
    name: archived work
    status: ARCHIVED
    owned_scope: ["**"]
  - id: INT-006
    name: git admin
    status: IN_PROGRESS
    owned_scope: ["**", ".git/hooks/**"]
  - id: INT-007
    name: everything
    status: IN_PROGRESS
    owned_scope: ["**"]
`

func testSnapshot(t *testing.T, failOpen bool) *Snapshot {
	t.Helper()
	in, _, err := ParseIntents("p.yaml", []byte(decidePolicy))
	if err != nil {
		t.Fatal(err)
	}
	ig := loadIgnore(t, "build/\n*.lock\n")
	return &Snapshot{Intents: in, Ignore: ig, FailOpen: failOpen}
}

func TestDecide(t *testing.T) {
	s := testSnapshot(t, false)
	tests := []struct {
		name string
		req  Request
		code Code
	}{
		{"create in scope", Request{Op: OpCreate, Path: "src/api/h.go", Intent: "INT-001"}, CodeAllowed},
		{"open write in scope", Request{Op: OpOpenWrite, Path: "README.md", Intent: "INT-001"}, CodeAllowed},
		{"create out of scope", Request{Op: OpCreate, Path: "src/db/x.go", Intent: "INT-001"}, CodeOutOfScope},
		{"truncate out of scope", Request{Op: OpTruncate, Path: "main.go", Intent: "INT-001"}, CodeOutOfScope},
		{"chmod out of scope", Request{Op: OpChmod, Path: "main.go", Intent: "INT-001"}, CodeOutOfScope},
		{"chown in scope", Request{Op: OpChown, Path: "src/api/a", Intent: "INT-001"}, CodeAllowed},
		{"utimes out of scope", Request{Op: OpUtimes, Path: "x", Intent: "INT-001"}, CodeOutOfScope},
		{"setxattr out", Request{Op: OpSetxattr, Path: "x", Intent: "INT-001"}, CodeOutOfScope},
		{"removexattr in", Request{Op: OpRemovexattr, Path: "src/api/x", Intent: "INT-001"}, CodeAllowed},
		{"fallocate out", Request{Op: OpFallocate, Path: "x", Intent: "INT-001"}, CodeOutOfScope},
		{"copy_file_range in", Request{Op: OpCopyFileRange, Path: "src/api/x", Intent: "INT-001"}, CodeAllowed},
		{"mknod out", Request{Op: OpMknod, Path: "fifo", Intent: "INT-001"}, CodeOutOfScope},
		{"symlink in", Request{Op: OpSymlink, Path: "src/api/l", Intent: "INT-001"}, CodeAllowed},
		{"unlink out", Request{Op: OpUnlink, Path: "go.mod", Intent: "INT-001"}, CodeOutOfScope},
		{"rmdir in", Request{Op: OpRmdir, Path: "src/api/old", IsDir: true, Intent: "INT-001"}, CodeAllowed},
		{"mkdir scope ancestor", Request{Op: OpMkdir, Path: "src", IsDir: true, Intent: "INT-001"}, CodeAllowed},
		{"mkdir scope prefix", Request{Op: OpMkdir, Path: "src/api", IsDir: true, Intent: "INT-001"}, CodeAllowed},
		{"mkdir sibling", Request{Op: OpMkdir, Path: "src/db", IsDir: true, Intent: "INT-001"}, CodeOutOfScope},
		{"create in scope ancestor is not mkdir", Request{Op: OpCreate, Path: "src", Intent: "INT-001"}, CodeOutOfScope},
		{"rename both in", Request{Op: OpRename, Path: "src/api/a", Path2: "src/api/b", Intent: "INT-001"}, CodeAllowed},
		{"rename out to in", Request{Op: OpRename, Path: "main.go", Path2: "src/api/main.go", Intent: "INT-001"}, CodeOutOfScope},
		{"rename in to out", Request{Op: OpRename, Path: "src/api/a", Path2: "a", Intent: "INT-001"}, CodeOutOfScope},
		{"rename exchange out", Request{Op: OpRename, Path: "src/api/a", Path2: "b", RenameFlags: RenameExchange, Intent: "INT-001"}, CodeOutOfScope},
		{"rename noreplace in", Request{Op: OpRename, Path: "src/api/a", Path2: "src/api/c", RenameFlags: RenameNoReplace, Intent: "INT-001"}, CodeAllowed},
		{"rename dir partly in scope", Request{Op: OpRename, Path: "src", Path2: "src2", IsDir: true, Intent: "INT-007"}, CodeAllowed},
		{"rename dir not wholly in scope", Request{Op: OpRename, Path: "docs", Path2: "src/api/docs", IsDir: true, Intent: "INT-001"}, CodeOutOfScope},
		{"link laundering", Request{Op: OpLink, Path: "src/api/alias", Path2: "main.go", Intent: "INT-001"}, CodeOutOfScope},
		{"link both in", Request{Op: OpLink, Path: "src/api/alias", Path2: "src/api/a", Intent: "INT-001"}, CodeAllowed},
		{"link a governed file into an exempt dir", Request{Op: OpLink, Path: "build/alias", Path2: "src/api/a", Intent: "INT-001"}, CodeOutOfScope},
		{"link an exempt file to a governed name", Request{Op: OpLink, Path: "src/api/alias", Path2: "build/out", Intent: "INT-001"}, CodeOutOfScope},
		{"link within exempt paths", Request{Op: OpLink, Path: "build/b", Path2: "build/a"}, CodeExempt},
		{"link a git object to a governed name", Request{Op: OpLink, Path: "src/api/obj", Path2: ".git/objects/ab/cd", Intent: "INT-001"}, CodeOutOfScope},
		{"no intent", Request{Op: OpCreate, Path: "src/api/a"}, CodeNoIntent},
		{"unknown intent", Request{Op: OpCreate, Path: "src/api/a", Intent: "INT-999"}, CodeUnknownIntent},
		{"pending", Request{Op: OpCreate, Path: "a", Intent: "INT-002"}, CodeNotInProgress},
		{"blocked", Request{Op: OpCreate, Path: "a", Intent: "INT-003"}, CodeNotInProgress},
		{"complete", Request{Op: OpCreate, Path: "a", Intent: "INT-004"}, CodeNotInProgress},
		{"archived", Request{Op: OpCreate, Path: "a", Intent: "INT-005"}, CodeNotInProgress},
		{"orchestration protected", Request{Op: OpOpenWrite, Path: ".orchestration/active_intents.yaml", Intent: "INT-007"}, CodeProtected},
		{"orchestration dir protected", Request{Op: OpRename, Path: ".orchestration", Path2: "x", IsDir: true, Intent: "INT-007"}, CodeProtected},
		{"rename into orchestration", Request{Op: OpRename, Path: "x", Path2: ".orchestration/agent_trace.jsonl", Intent: "INT-007"}, CodeProtected},
		{"git hook protected under **", Request{Op: OpCreate, Path: ".git/hooks/pre-commit", Intent: "INT-007"}, CodeProtected},
		{"git config protected", Request{Op: OpRename, Path: ".git/config.lock", Path2: ".git/config", Intent: "INT-007"}, CodeProtected},
		{"git dir rename protected", Request{Op: OpRename, Path: ".git", Path2: "g", IsDir: true, Intent: "INT-007"}, CodeProtected},
		{"mkdir .git is exempt", Request{Op: OpMkdir, Path: ".git", IsDir: true}, CodeExempt},
		{"rmdir .git protected", Request{Op: OpRmdir, Path: ".git", IsDir: true, Intent: "INT-007"}, CodeProtected},
		{"git hook explicit grant", Request{Op: OpCreate, Path: ".git/hooks/pre-commit", Intent: "INT-006"}, CodeAllowed},
		{"git objects exempt without intent", Request{Op: OpCreate, Path: ".git/objects/ab/cd"}, CodeExempt},
		{"git index exempt", Request{Op: OpRename, Path: ".git/index.lock", Path2: ".git/index"}, CodeExempt},
		{"ignored dir exempt", Request{Op: OpCreate, Path: "build/out.o"}, CodeExempt},
		{"ignored file exempt", Request{Op: OpOpenWrite, Path: "deep/x.lock"}, CodeExempt},
		{"rename exempt to governed", Request{Op: OpRename, Path: "build/out", Path2: "main.go", Intent: "INT-001"}, CodeOutOfScope},
		{"root utimes under **", Request{Op: OpUtimes, Path: "", IsDir: true, Intent: "INT-007"}, CodeAllowed},
		{"root chmod out of scope", Request{Op: OpChmod, Path: "", IsDir: true, Intent: "INT-001"}, CodeOutOfScope},
		{"escaping path", Request{Op: OpCreate, Path: "../etc/passwd", Intent: "INT-007"}, CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := s.Decide(tt.req)
			if d.Code != tt.code {
				t.Fatalf("code = %s (%s), want %s", d.Code, d.Reason, tt.code)
			}
			wantAllow := tt.code == CodeAllowed || tt.code == CodeExempt
			if d.Allow != wantAllow {
				t.Errorf("allow = %v, want %v", d.Allow, wantAllow)
			}
			if !d.Allow && d.Reason == "" {
				t.Errorf("denial without a reason")
			}
			if d.Allow == (d.Validation == ValidationFail) {
				t.Errorf("validation %s does not fit allow=%v", d.Validation, d.Allow)
			}
		})
	}
}

func TestDecideFailClosedAndOpen(t *testing.T) {
	var nilSnap *Snapshot
	if d := nilSnap.Decide(Request{Op: OpCreate, Path: "a", Intent: "INT-001"}); d.Allow || d.Code != CodeInternal {
		t.Errorf("nil snapshot: %+v, want fail-closed deny", d)
	}
	open := testSnapshot(t, true)
	if d := open.cannotDecide("a", "boom"); !d.Allow || d.Code != CodeFailOpen {
		t.Errorf("fail-open cannotDecide: %+v", d)
	}
	// fail-open never lifts the built-in protection.
	if d := open.Decide(Request{Op: OpUnlink, Path: ".orchestration/agent_trace.jsonl", Intent: "INT-007"}); d.Allow {
		t.Errorf("fail-open allowed a ledger unlink")
	}
	closed := testSnapshot(t, false)
	if d := closed.cannotDecide("a", "boom"); d.Allow || d.Code != CodeInternal {
		t.Errorf("fail-closed cannotDecide: %+v", d)
	}
}

// listing is a Subtree over a fixed set of entries; "/" suffixes mark
// directories.
func listing(entries ...string) Subtree {
	return func(fn func(rel string, isDir bool) bool) error {
		for _, e := range entries {
			name, isDir := strings.CutSuffix(e, "/")
			if !fn(name, isDir) {
				return nil
			}
		}
		return nil
	}
}

func TestDecideDirectoryMoveIsExact(t *testing.T) {
	in, _, err := ParseIntents("p.yaml", []byte(`active_intents:
  - id: INT-001
    name: no underscores
    status: IN_PROGRESS
    owned_scope: ["a/**/[!_]*"]
  - id: INT-002
    name: prefix
    status: IN_PROGRESS
    owned_scope: ["src/**"]
`))
	if err != nil {
		t.Fatal(err)
	}
	ig := loadIgnore(t, "*.tmp\n")
	s := &Snapshot{Intents: in, Ignore: ig}
	tooLarge := func(fn func(string, bool) bool) error { return ErrSubtreeTooLarge }
	failing := func(fn func(string, bool) bool) error { return errors.New("EIO") }
	tests := []struct {
		name   string
		req    Request
		code   Code
		reason string
	}{
		{"carries an out-of-scope file", Request{Op: OpRename, Path: "a/b", Path2: "a/c", IsDir: true, Subtree: listing("x.go", "_secret")}, CodeOutOfScope, "a/b/_secret"},
		{"nested out-of-scope file", Request{Op: OpRename, Path: "a/b", Path2: "a/c", IsDir: true, Subtree: listing("d/", "d/_x")}, CodeOutOfScope, "a/b/d/_x"},
		{"everything in scope", Request{Op: OpRename, Path: "a/b", Path2: "a/c", IsDir: true, Subtree: listing("x.go", "d/", "d/y")}, CodeAllowed, ""},
		{"ignored entries do not count", Request{Op: OpRename, Path: "a/b", Path2: "a/c", IsDir: true, Subtree: listing("_x.tmp")}, CodeAllowed, ""},
		{"no listing: refused", Request{Op: OpRename, Path: "a/b", Path2: "a/c", IsDir: true}, CodeOutOfScope, "not wholly inside"},
		{"listing too large: refused", Request{Op: OpRename, Path: "a/b", Path2: "a/c", IsDir: true, Subtree: tooLarge}, CodeOutOfScope, "too many entries"},
		{"listing fails: refused", Request{Op: OpRename, Path: "a/b", Path2: "a/c", IsDir: true, Subtree: failing}, CodeOutOfScope, "EIO"},
		{"exchange brings an out-of-scope file", Request{Op: OpRename, Path: "a/b", Path2: "a/c", IsDir: true, IsDir2: true, RenameFlags: RenameExchange,
			Subtree: listing("ok"), Subtree2: listing("_secret")}, CodeOutOfScope, "_secret"},
		{"prefix scope needs no listing", Request{Op: OpRename, Path: "src/x", Path2: "src/y", IsDir: true}, CodeAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.req
			r.Intent = "INT-001"
			if strings.HasPrefix(r.Path, "src/") {
				r.Intent = "INT-002"
			}
			d := s.Decide(r)
			if d.Code != tt.code || !strings.Contains(d.Reason, tt.reason) {
				t.Fatalf("got %s (%s), want %s containing %q", d.Code, d.Reason, tt.code, tt.reason)
			}
		})
	}
}

// TestDecideNamesTheWorkspaceTop: a refusal on the workspace's own top
// directory names it, instead of an empty path (" is outside the
// owned_scope of …").
func TestDecideNamesTheWorkspaceTop(t *testing.T) {
	s := testSnapshot(t, false)
	for _, op := range []Op{OpChmod, OpChown, OpUtimes} {
		d := s.Decide(Request{Op: op, Path: "", IsDir: true, Intent: "INT-001"})
		if d.Allow || !strings.HasPrefix(d.Reason, "the workspace's top directory (.) is outside the owned_scope of INT-001") {
			t.Errorf("%s of the top: %s %q", op, d.Code, d.Reason)
		}
	}
}
