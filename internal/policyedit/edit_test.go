package policyedit

import (
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/policy"
)

const editPolicy = `# Team policy — edited by hand and by intentfs.
active_intents:
  # The API work.
  - id: INT-001
    name: 'API work'   # quoted on purpose
    status: PENDING
    owned_scope:
      - "src/api/**"   # the handlers
      - docs/api.md
    constraints: [no new deps]
    created_at: "2026-01-01T00:00:00Z"
    updated_at: "2026-01-01T00:00:00Z"

  - {id: INT-002, name: flow one, status: "IN_PROGRESS", owned_scope: ["lib/**", 'x/**'], updated_at: "2026-01-01T00:00:00Z"}

  - id: INT-003
    name: "no timestamps"
    status: IN_PROGRESS
    owned_scope: ["a/**"]
# trailing comment
`

var fixed = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func TestApplyChangeKeepsEverythingElse(t *testing.T) {
	tests := []struct {
		name   string
		change IntentChange
		want   string // the expected file
		// wantErr, if set, is part of the error the change must fail with.
		wantErr string
	}{
		{
			"status of a block intent",
			IntentChange{ID: "INT-001", Status: policy.StatusInProgress, Now: fixed},
			strings.NewReplacer("status: PENDING", "status: IN_PROGRESS",
				`    updated_at: "2026-01-01T00:00:00Z"

  - {id: INT-002`, `    updated_at: "2026-11-22T10:00:00Z"

  - {id: INT-002`).Replace(editPolicy), "",
		},
		{
			"scope add to a block list bumps version",
			IntentChange{ID: "INT-001", AddScope: []string{"src/db/**"}, Now: fixed},
			strings.NewReplacer("      - docs/api.md\n", "      - docs/api.md\n      - src/db/**\n",
				`    updated_at: "2026-01-01T00:00:00Z"

  - {id: INT-002`, `    updated_at: "2026-11-22T10:00:00Z"
    version: 2

  - {id: INT-002`).Replace(editPolicy), "",
		},
		{
			"scope remove from a block list",
			IntentChange{ID: "INT-001", RemoveScope: []string{"src/api/**"}, Now: fixed},
			strings.NewReplacer("      - \"src/api/**\"   # the handlers\n", "",
				`    updated_at: "2026-01-01T00:00:00Z"

  - {id: INT-002`, `    updated_at: "2026-11-22T10:00:00Z"
    version: 2

  - {id: INT-002`).Replace(editPolicy), "",
		},
		{
			"flow intent refuses a scope edit",
			IntentChange{ID: "INT-002", Status: policy.StatusBlocked, AddScope: []string{"y/**"}, Now: fixed},
			"", "flow-style",
		},
		{
			"missing updated_at is added",
			IntentChange{ID: "INT-003", Status: policy.StatusComplete, Now: fixed},
			strings.Replace(editPolicy, "    status: IN_PROGRESS\n    owned_scope: [\"a/**\"]\n", "    status: COMPLETE\n    owned_scope: [\"a/**\"]\n    updated_at: \"2026-11-22T10:00:00Z\"\n", 1), "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ApplyChange("p.yaml", []byte(editPolicy), tt.change)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out, tt.want)
			}
			in, _, err := policy.ParseIntents("p.yaml", out)
			if err != nil {
				t.Fatal(err)
			}
			if got := in.Get(tt.change.ID); got.UpdatedAt != "2026-11-22T10:00:00Z" {
				t.Errorf("updated_at = %q", got.UpdatedAt)
			}
		})
	}
}

func TestApplyChangeFlowIntentStatus(t *testing.T) {
	out, err := ApplyChange("p.yaml", []byte(editPolicy), IntentChange{ID: "INT-002", Status: policy.StatusBlocked, Now: fixed})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(editPolicy, `status: "IN_PROGRESS", owned_scope: ["lib/**", 'x/**'], updated_at: "2026-01-01T00:00:00Z"}`,
		`status: "BLOCKED", owned_scope: ["lib/**", 'x/**'], updated_at: "2026-11-22T10:00:00Z"}`, 1)
	if string(out) != want {
		t.Fatalf("got:\n%s", out)
	}
}

func TestApplyChangeFlowSequence(t *testing.T) {
	const p = "active_intents:\n  - id: INT-001\n    name: flow scope\n    status: IN_PROGRESS\n    owned_scope: [\"a/**\", 'b/**']  # keep me\n    updated_at: '2026-01-01T00:00:00Z'\n"
	out, err := ApplyChange("p.yaml", []byte(p), IntentChange{ID: "INT-001", AddScope: []string{"c/**"}, RemoveScope: []string{"a/**"}, Now: fixed})
	if err != nil {
		t.Fatal(err)
	}
	want := "active_intents:\n  - id: INT-001\n    name: flow scope\n    status: IN_PROGRESS\n    owned_scope: ['b/**', \"c/**\"]  # keep me\n    updated_at: '2026-11-22T10:00:00Z'\n    version: 2\n"
	if string(out) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestApplyChangeRefusals(t *testing.T) {
	tests := []struct {
		name   string
		change IntentChange
		msg    string
	}{
		{"unknown intent", IntentChange{ID: "INT-404"}, "no intent INT-404"},
		{"empty scope", IntentChange{ID: "INT-003", RemoveScope: []string{"a/**"}}, "would be empty"},
		{"absent pattern", IntentChange{ID: "INT-001", RemoveScope: []string{"nope/**"}}, "has no pattern"},
		{"bad glob", IntentChange{ID: "INT-001", AddScope: []string{"src/["}}, "not a valid glob"},
	}
	for _, tt := range tests {
		if _, err := ApplyChange("p.yaml", []byte(editPolicy), tt.change); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.msg)
		}
	}
	if _, err := ApplyChange("p.yaml", []byte("active_intents: [\n"), IntentChange{ID: "INT-001"}); err == nil || !strings.Contains(err.Error(), "invalid policy") {
		t.Errorf("invalid input: %v", err)
	}
}

func TestAppendIntent(t *testing.T) {
	n := NewIntent{ID: "INT-009", Name: `Say "hi"`, Scope: []string{"src/api/web/**"}, Constraints: []string{"be kind"}, AcceptanceCriteria: []string{"it works"}, Parent: "INT-001", Now: fixed}
	tests := []struct {
		name, in string
		// parent is the new intent's parent: only a policy that holds
		// INT-001 can have one.
		parent string
		// keepsText is the text the result must begin with, unchanged.
		keepsText string
	}{
		{"block list", editPolicy, "INT-001", strings.TrimSuffix(editPolicy, "# trailing comment\n")},
		{"empty flow list", "# header\nactive_intents: []\n", "", "# header\n"},
		{"null list", "active_intents:\n", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nn := n
			nn.Parent = tt.parent
			out, err := AppendIntent("p.yaml", []byte(tt.in), nn)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(out), strings.TrimRight(strings.SplitN(tt.in, "active_intents:", 2)[0], "")) {
				t.Errorf("prefix changed:\n%s", out)
			}
			if !strings.HasPrefix(string(out), tt.keepsText) {
				t.Errorf("existing text changed:\n%s", out)
			}
			in, _, err := policy.ParseIntents("p.yaml", out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			got := in.Get("INT-009")
			if got == nil || got.Name != `Say "hi"` || got.Status != policy.StatusPending || got.OwnedScope[0] != "src/api/web/**" || got.CreatedAt != "2026-11-22T10:00:00Z" {
				t.Fatalf("appended = %+v\n%s", got, out)
			}
		})
	}
	if _, err := AppendIntent("p.yaml", []byte(editPolicy), NewIntent{ID: "INT-001", Name: "dup", Scope: []string{"x"}}); err == nil {
		t.Error("duplicate id accepted")
	}
}
