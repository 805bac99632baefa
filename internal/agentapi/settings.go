package agentapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// HookSpec is one hook intentfs installs: a command for an event, on the
// tools the matcher names.
type HookSpec struct {
	Event   string
	Matcher string
	Command string
}

// hookTimeoutSeconds is the timeout written for intentfs's hooks: a check
// is one round trip to the daemon.
const hookTimeoutSeconds = 10

// ClaudeHooks are the hooks of `intentfs hook install claude`: writes are
// checked before they happen; after any tool, new denials are explained.
func ClaudeHooks(command string) []HookSpec {
	return []HookSpec{
		{Event: "PreToolUse", Matcher: "Write|Edit|MultiEdit|NotebookEdit", Command: command},
		{Event: "PostToolUse", Matcher: "*", Command: command},
		{Event: "PostToolUseFailure", Matcher: "*", Command: command},
	}
}

// CodexHooks are the hooks of `intentfs hook install codex`. Codex edits
// files with apply_patch (matched as apply_patch, Edit or Write) and runs
// commands as Bash; it has no PostToolUseFailure event.
func CodexHooks(command string) []HookSpec {
	return []HookSpec{
		{Event: "PreToolUse", Matcher: "apply_patch|Edit|Write", Command: command},
		{Event: "PostToolUse", Matcher: "*", Command: command},
	}
}

// IsIntentfsHook reports whether a hook command is intentfs's own for
// agent ("claude" or "codex"): `[.../]intentfs hook AGENT [...]`.
func IsIntentfsHook(command, agent string) bool {
	f := strings.Fields(command)
	return len(f) >= 3 && strings.Trim(filepath.Base(f[0]), `"'`) == "intentfs" && f[1] == "hook" && f[2] == agent
}

// MergeHooks adds specs to a settings file's "hooks" (Claude Code's
// .claude/settings.json, Codex's .codex/hooks.json: the same shape),
// replacing intentfs's earlier entries and keeping everything else --
// other keys, other hooks, their order -- as it was. Empty input is an
// empty object. The result is indented JSON ending in a newline.
func MergeHooks(settings []byte, specs []HookSpec, agent string) ([]byte, error) {
	if len(bytes.TrimSpace(settings)) == 0 {
		settings = []byte("{}")
	}
	var top orderedObject
	if err := json.Unmarshal(settings, &top); err != nil {
		return nil, fmt.Errorf("the settings are not a JSON object: %w", err)
	}
	var hooks orderedObject
	if raw, ok := top.get("hooks"); ok {
		if err := json.Unmarshal(raw, &hooks); err != nil {
			return nil, fmt.Errorf(`"hooks" is not a JSON object: %w`, err)
		}
	}
	for _, spec := range specs {
		var groups []json.RawMessage
		if raw, ok := hooks.get(spec.Event); ok {
			if err := json.Unmarshal(raw, &groups); err != nil {
				return nil, fmt.Errorf(`"hooks.%s" is not a JSON array: %w`, spec.Event, err)
			}
		}
		kept, err := dropOurs(groups, agent)
		if err != nil {
			return nil, fmt.Errorf(`"hooks.%s": %w`, spec.Event, err)
		}
		// Keys in the order the documentation writes them.
		ours := mustJSON(orderedObject{{"matcher", mustJSON(spec.Matcher)}, {"hooks", mustJSON([]any{
			orderedObject{{"type", mustJSON("command")}, {"command", mustJSON(spec.Command)}, {"timeout", mustJSON(hookTimeoutSeconds)}}})}})
		hooks.set(spec.Event, mustJSON(append(kept, ours)))
	}
	top.set("hooks", mustJSON(hooks))
	compact, err := json.Marshal(top)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// dropOurs removes intentfs's hooks for agent from matcher groups; a
// group left empty by that is removed, other groups are kept verbatim.
func dropOurs(groups []json.RawMessage, agent string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for i, g := range groups {
		var obj orderedObject
		if err := json.Unmarshal(g, &obj); err != nil {
			return nil, fmt.Errorf("entry %d is not an object: %w", i, err)
		}
		raw, ok := obj.get("hooks")
		if !ok {
			out = append(out, g)
			continue
		}
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf(`entry %d: "hooks" is not an array: %w`, i, err)
		}
		var keep []json.RawMessage
		for _, h := range list {
			var cmd struct {
				Command string `json:"command"`
			}
			if json.Unmarshal(h, &cmd) == nil && IsIntentfsHook(cmd.Command, agent) {
				continue
			}
			keep = append(keep, h)
		}
		switch {
		case len(keep) == len(list):
			out = append(out, g)
		case len(keep) > 0:
			obj.set("hooks", mustJSON(keep))
			out = append(out, mustJSON(obj))
		}
	}
	return out, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only values built here are marshalled
	}
	return b
}

// member is one key of an orderedObject.
type member struct {
	Key   string
	Value json.RawMessage
}

// orderedObject is a JSON object that keeps its keys in order, so a
// rewritten settings file differs from the original only where intentfs
// changed it.
type orderedObject []member

func (o orderedObject) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

func (o *orderedObject) set(key string, v json.RawMessage) {
	for i := range *o {
		if (*o)[i].Key == key {
			(*o)[i].Value = v
			return
		}
	}
	*o = append(*o, member{key, v})
}

// UnmarshalJSON reads an object, keeping key order; a duplicate key is
// refused rather than silently resolved.
func (o *orderedObject) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	*o = nil
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		*o = append(*o, member{key, v})
	}
	_, err = dec.Token()
	return err
}

// MarshalJSON writes the object in its key order.
func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		if len(m.Value) == 0 {
			b.WriteString("null")
		} else {
			b.Write(m.Value)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
