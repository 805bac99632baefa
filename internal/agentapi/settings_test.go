package agentapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMergeHooksKeepsWhatIsThereAndIsIdempotent(t *testing.T) {
	const cmd = "intentfs hook claude"
	cases := []struct {
		name     string
		in       string
		wantKeys []string // top-level keys, in order
		check    func(t *testing.T, out string)
	}{
		{name: "missing file", in: "", wantKeys: []string{"hooks"}},
		{name: "unknown keys keep their order", in: `{"zeta":1,"permissions":{"allow":["Bash(ls)"]},"alpha":true}`,
			wantKeys: []string{"zeta", "permissions", "alpha", "hooks"}},
		{name: "other hooks stay, before ours", in: `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./lint.sh"}]}]}}`,
			wantKeys: []string{"hooks"},
			check: func(t *testing.T, out string) {
				if i, j := strings.Index(out, "./lint.sh"), strings.Index(out, cmd); i < 0 || j < i {
					t.Errorf("the human's hook must stay, before ours:\n%s", out)
				}
			}},
		{name: "an old intentfs entry is replaced, a shared group keeps its other hook",
			in:       `{"hooks":{"PreToolUse":[{"matcher":"Write","hooks":[{"type":"command","command":"/opt/bin/intentfs hook claude"},{"type":"command","command":"./fmt.sh"}]}]}}`,
			wantKeys: []string{"hooks"},
			check: func(t *testing.T, out string) {
				if strings.Contains(out, "/opt/bin/intentfs") || !strings.Contains(out, "./fmt.sh") {
					t.Errorf("old entry not replaced or neighbour lost:\n%s", out)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := MergeHooks([]byte(c.in), ClaudeHooks(cmd), "claude")
			if err != nil {
				t.Fatal(err)
			}
			var top orderedObject
			if err := json.Unmarshal(out, &top); err != nil {
				t.Fatalf("result is not JSON: %v\n%s", err, out)
			}
			var keys []string
			for _, m := range top {
				keys = append(keys, m.Key)
			}
			if strings.Join(keys, ",") != strings.Join(c.wantKeys, ",") {
				t.Errorf("keys %v, want %v", keys, c.wantKeys)
			}
			var parsed struct {
				Hooks map[string][]struct {
					Matcher string `json:"matcher"`
					Hooks   []struct{ Type, Command string }
				} `json:"hooks"`
			}
			if err := json.Unmarshal(out, &parsed); err != nil {
				t.Fatal(err)
			}
			for _, spec := range ClaudeHooks(cmd) {
				n := 0
				for _, g := range parsed.Hooks[spec.Event] {
					for _, h := range g.Hooks {
						if h.Command == cmd {
							n++
							if g.Matcher != spec.Matcher || h.Type != "command" {
								t.Errorf("%s: matcher %q type %q", spec.Event, g.Matcher, h.Type)
							}
						}
					}
				}
				if n != 1 {
					t.Errorf("%s has our hook %d times, want once:\n%s", spec.Event, n, out)
				}
			}
			if c.check != nil {
				c.check(t, string(out))
			}
			again, err := MergeHooks(out, ClaudeHooks(cmd), "claude")
			if err != nil || string(again) != string(out) {
				t.Errorf("a second merge changed the file (err %v):\n%s\n---\n%s", err, out, again)
			}
		})
	}
}

func TestMergeHooksRefusesWhatItCannotMergeSafely(t *testing.T) {
	for _, in := range []string{`[1]`, `{"hooks":[]}`, `{"hooks":{"PreToolUse":{}}}`, `{"a":1,"a":2}`, `{"hooks":{"PreToolUse":[3]}}`, `{`} {
		if _, err := MergeHooks([]byte(in), ClaudeHooks("intentfs hook claude"), "claude"); err == nil {
			t.Errorf("%s: merged, want an error", in)
		}
	}
}

func TestIsIntentfsHook(t *testing.T) {
	for cmd, want := range map[string]bool{
		"intentfs hook claude":                    true,
		"/usr/local/bin/intentfs hook claude --x": true,
		"'/a b/intentfs' hook claude":             false, // quoted paths with spaces split; not recognised
		"intentfs hook codex":                     false,
		"notintentfs hook claude":                 false,
		"./lint.sh":                               false,
	} {
		if got := IsIntentfsHook(cmd, "claude"); got != want {
			t.Errorf("%q: %v, want %v", cmd, got, want)
		}
	}
}
