package policy

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const approvalsPolicy = `approvals:
  - name: mass-delete
    ops: [delete]
    more_than: 50
    within: 10s
  - name: big-delete
    ops: [unlink]
    larger_than: 1MiB
    timeout: 30s
active_intents:
  - id: INT-001
    name: api work
    status: IN_PROGRESS
    owned_scope: ["**"]
    approvals:
      - ops: [rename, chmod]
        paths: ["src/**"]
  - id: INT-002
    name: other
    status: IN_PROGRESS
    owned_scope: ["**"]
`

func TestApprovalRulesParse(t *testing.T) {
	in, _, err := ParseIntents("p.yaml", []byte(approvalsPolicy))
	if err != nil {
		t.Fatal(err)
	}
	snap := &Snapshot{Intents: in}
	if !snap.HasApprovalRules() {
		t.Fatal("HasApprovalRules = false")
	}
	rules := snap.ApprovalRulesFor("INT-001")
	if len(rules) != 3 || len(snap.ApprovalRulesFor("INT-002")) != 2 || len(snap.ApprovalRulesFor("")) != 2 {
		t.Fatalf("rules for INT-001: %d, INT-002: %d", len(rules), len(snap.ApprovalRulesFor("INT-002")))
	}
	mass, big, own := rules[0], rules[1], rules[2]
	if mass.MoreThan != 50 || mass.Within != 10*time.Second || mass.Timeout != DefaultApprovalTimeout || len(mass.Ops) != 2 {
		t.Errorf("mass-delete = %+v", mass)
	}
	if big.LargerThan != 1<<20 || big.Timeout != 30*time.Second {
		t.Errorf("big-delete = %+v", big)
	}
	if own.Name != "line 16" || own.Intent != "INT-001" || own.Key() != "INT-001#line 16" {
		t.Errorf("INT-001's rule = %+v", own)
	}
	for _, c := range []struct {
		rule  *ApprovalRule
		op    Op
		paths []string
		want  bool
	}{
		{mass, OpUnlink, []string{"a"}, true},
		{mass, OpRmdir, []string{"a"}, true},
		{mass, OpCreate, []string{"a"}, false},
		{own, OpRename, []string{"docs/x", "src/y"}, true},
		{own, OpRename, []string{"docs/x", "lib/y"}, false},
		{own, OpChmod, []string{"src/a/b.go"}, true},
	} {
		if got := c.rule.Matches(c.op, c.paths...); got != c.want {
			t.Errorf("%s.Matches(%s, %v) = %v", c.rule.Name, c.op, c.paths, got)
		}
	}
	if d := mass.Describe(); d != "more than 50 of unlink, rmdir within 10s" {
		t.Errorf("Describe = %q", d)
	}
	if d := big.Describe(); d != "every unlink of a file larger than 1MiB" {
		t.Errorf("Describe = %q", d)
	}
}

func TestApprovalRulesDiagnostics(t *testing.T) {
	const tail = "active_intents:\n  - id: INT-001\n    name: api work\n    status: IN_PROGRESS\n    owned_scope: [\"**\"]\n"
	tests := []struct {
		name, rules, want string
	}{
		{"no ops", "  - name: x\n", "p.yaml:2:5: error: approval rule needs `ops:`"},
		{"unknown op", "  - ops: [delete, explode]\n", "p.yaml:2:19: error: unknown operation \"explode\""},
		{"rate without window", "  - ops: [delete]\n    more_than: 5\n", "p.yaml:3:16: error: more_than needs `within:`"},
		{"bad window", "  - ops: [delete]\n    more_than: 5\n    within: forever\n", "p.yaml:4:13: error: within must be a duration"},
		{"size on writes", "  - ops: [write]\n    larger_than: 1MiB\n", "p.yaml:3:18: error: larger_than applies to deletions only"},
		{"bad size", "  - ops: [delete]\n    larger_than: huge\n", "p.yaml:3:18: error: larger_than must be a size"},
		{"timeout too long", "  - ops: [delete]\n    timeout: 48h\n", "p.yaml:3:14: error: timeout must be a duration from 1s to 24h0m0s"},
		{"unknown field", "  - ops: [delete]\n    when: always\n", "p.yaml:3:5: error: unknown approval rule field \"when\""},
		{"field twice", "  - ops: [delete]\n    ops: [chmod]\n", "p.yaml:3:5: error: field \"ops\" appears twice in this approval rule"},
		{"duplicate name", "  - {name: a, ops: [delete]}\n  - {name: a, ops: [chmod]}\n", "p.yaml:3:5: error: approval rule name \"a\" is used twice (first on line 2)"},
		{"bad glob", "  - ops: [delete]\n    paths: [\"/etc/**\"]\n", "p.yaml:3:13: error: approval paths pattern \"/etc/**\""},
		{"not a list", "  ops: [delete]\n", "p.yaml:2:3: error: approvals must be a list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseIntents("p.yaml", []byte("approvals:\n"+tc.rules+tail))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1MiB": 1 << 20, "512KiB": 512 << 10, "100": 100, "2GB": 2e9, "7 B": 7} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "1.5MiB", "99999999999GiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded", in)
		}
	}
}
