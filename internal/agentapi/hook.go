package agentapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/intentfs/intentfs/control"
)

// maxHookInput bounds the JSON a hook reads from stdin; a Write's content
// rides along, so it is generous.
const maxHookInput = 64 << 20

// HookInput is the part of Claude Code's (and Codex's) hook input that
// intentfs reads. See https://code.claude.com/docs/en/hooks: every event
// carries session_id, cwd and hook_event_name; tool events carry
// tool_name and tool_input.
type HookInput struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
}

// HookOutput is the JSON answer: hookSpecificOutput with a permission
// decision (PreToolUse) or additional context (PostToolUse,
// PostToolUseFailure).
type HookOutput struct {
	HookSpecificOutput HookSpecific `json:"hookSpecificOutput"`
}

// HookSpecific is the event-specific part of a HookOutput.
type HookSpecific struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
	AdditionalContext        string `json:"additionalContext,omitempty"`
}

// Hook answers hook events for the mounts it can locate.
type Hook struct {
	// Agent is the agent whose events these are: "claude" or "codex".
	Agent   string
	Locator Locator
	// Open reaches a mount (nil: FileMount).
	Open func(mountpoint string) Mount
	// Cursors remembers which denials a session was already told about
	// (nil: nothing is remembered; denials of the last Window are told).
	Cursors *CursorStore
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Window is how far back denials are reported to a session with no
	// cursor yet (0: one minute).
	Window time.Duration
}

func (h *Hook) open(mp string) Mount {
	if h.Open != nil {
		return h.Open(mp)
	}
	return FileMount{Mountpoint: mp}
}

func (h *Hook) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// ParseHookInput decodes a hook's stdin.
func ParseHookInput(data []byte) (*HookInput, error) {
	if len(data) > maxHookInput {
		return nil, fmt.Errorf("hook input is larger than %d bytes", maxHookInput)
	}
	var in HookInput
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("hook input is not the JSON object Claude Code sends on stdin: %w", err)
	}
	if in.HookEventName == "" {
		return nil, errors.New(`hook input has no "hook_event_name": run this command from a Claude Code or Codex hook, not by hand`)
	}
	return &in, nil
}

// Run answers one hook event; nil output means "nothing to say" (exit 0
// with no output lets the tool call go on as usual).
func (h *Hook) Run(in *HookInput) (*HookOutput, error) {
	switch in.HookEventName {
	case "PreToolUse":
		return h.pre(in)
	case "PostToolUse", "PostToolUseFailure":
		return h.post(in)
	}
	return nil, nil
}

// pre refuses a file write that the mount would refuse, with the reason
// and what to do, before the agent tries it.
func (h *Hook) pre(in *HookInput) (*HookOutput, error) {
	targets, err := writeTargets(in)
	if err != nil {
		return nil, err
	}
	for _, w := range targets {
		t, ok, err := h.Locator.Locate(w.abs)
		if err != nil {
			return nil, fmt.Errorf("locating the mount of %s: %w", w.abs, err)
		}
		if !ok {
			continue // not governed by intentfs: not ours to judge
		}
		op := w.op
		if op == "" {
			op = "open_write"
			if !exists(w.abs) {
				op = "create"
			}
		}
		res, err := h.open(t.Mountpoint).DryRun(t.Rel, op)
		if err != nil {
			return nil, fmt.Errorf("asking the mount %s about %s: %w", t.Mountpoint, t.Rel, err)
		}
		if !res.Allowed {
			reason := HookDenyReason(t.Mountpoint, res)
			if h.Agent == "codex" {
				// Codex shows "...: REASON. Command: PATCH".
				reason = strings.TrimSuffix(reason, ".")
			}
			return &HookOutput{HookSpecific{HookEventName: "PreToolUse", PermissionDecision: "deny",
				PermissionDecisionReason: reason}}, nil
		}
	}
	return nil, nil
}

// post tells the agent about denials that happened since it was last
// told: a shell command that ran into EACCES learns why.
func (h *Hook) post(in *HookInput) (*HookOutput, error) {
	dir := in.Cwd
	if targets, err := writeTargets(in); err == nil && len(targets) > 0 {
		dir = filepath.Dir(targets[0].abs)
	}
	if dir == "" {
		return nil, nil
	}
	mp, ok, err := h.Locator.MountAt(dir)
	if err != nil || !ok {
		return nil, err
	}
	m := h.open(mp)
	st, err := m.Status()
	if err != nil {
		return nil, fmt.Errorf("reading the status of %s: %w", mp, err)
	}
	since := h.now().Add(-h.window())
	key := in.SessionID + "\x00" + mp
	if h.Cursors != nil {
		if c, ok := h.Cursors.Get(key); ok {
			since = c
		}
	}
	var fresh []control.Denial
	for _, d := range st.RecentDenials {
		if d.Time.After(since) {
			fresh = append(fresh, d)
		}
	}
	if len(fresh) == 0 {
		return h.filePermissionsContext(in, m)
	}
	if h.Cursors != nil {
		if err := h.Cursors.Set(key, fresh[len(fresh)-1].Time); err != nil {
			return nil, err
		}
	}
	report := DenialsReportFor(m, fresh, namedFiles(mp, in))
	return &HookOutput{HookSpecific{HookEventName: in.HookEventName, AdditionalContext: report}}, nil
}

// filePermissionsContext explains a failed write that intentfs did not
// refuse: the kernel refused it by the file's owner, mode or ACL before
// the daemon saw it, so no denial was recorded. It says nothing when the
// tool did not fail, or the permissions are not what refused it.
func (h *Hook) filePermissionsContext(in *HookInput, m Mount) (*HookOutput, error) {
	if in.HookEventName != "PostToolUseFailure" {
		return nil, nil
	}
	targets, err := writeTargets(in)
	if err != nil || len(targets) == 0 {
		return nil, nil
	}
	rel, err := filepath.Rel(m.Root(), targets[0].abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, nil
	}
	op := targets[0].op
	if op == "" {
		op = "open_write"
		if !exists(targets[0].abs) {
			op = "create"
		}
	}
	res, err := m.DryRun(rel, op)
	if err != nil || res.Code != control.CodeFilePermissions {
		return nil, nil
	}
	return &HookOutput{HookSpecific{HookEventName: in.HookEventName, AdditionalContext: DenyMessage(m.Root(), res)}}, nil
}

func (h *Hook) window() time.Duration {
	if h.Window > 0 {
		return h.Window
	}
	return time.Minute
}

// maxReported bounds how many denials one report lists.
const maxReported = 5

// DenialsReport explains denials to an agent: each one's reason and, for
// the distinct paths, what to do.
func DenialsReport(m Mount, denials []control.Denial) string {
	return DenialsReportFor(m, denials, nil)
}

// DenialsReportFor is DenialsReport for the denials of a command that
// named the existing files named (relative to the mount's root). A
// refused creation of a file the command did not name, beside exactly one
// file it did, is the new copy that sed -i, an editor or an atomic writer
// makes to rename over that file: the report says so, and advises about
// the file the agent meant instead of the temporary name.
func DenialsReportFor(m Mount, denials []control.Denial, named []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "intentfs refused %d change(s) in %s (each listed EACCES is a policy decision, not a bug; a \"Permission denied\" not listed here came from the file's own owner, mode or ACL: ask %s):\n",
		len(denials), m.Root(), filepath.Join(m.Root(), ControlDirName, "check"))
	shown := denials
	if len(shown) > maxReported {
		shown = shown[len(shown)-maxReported:]
	}
	advised := map[string]bool{}
	for _, d := range shown {
		fmt.Fprintf(&b, "- %s %s (%s): %s\n", d.Op, d.Path, d.Code, d.Reason)
		target := d.Path
		if meant := replacedFile(d, named); meant != "" {
			fmt.Fprintf(&b, "  %s is a new file the command made beside %s, to put in its place (as sed -i and editors do): the change is to %s.\n",
				path.Base(d.Path), meant, meant)
			target = meant
		}
		if advised[target] || strings.HasPrefix(target, ControlDirName+"/") || target == "" {
			continue
		}
		advised[target] = true
		if a := gitAdvice(d.Code); a != "" {
			fmt.Fprintf(&b, "  What to do: %s\n", a)
		} else if res, err := m.DryRun(target, "open_write"); err == nil {
			res.Code = d.Code
			fmt.Fprintf(&b, "  What to do: %s\n", Advice(m.Root(), res))
		}
	}
	if len(denials) > len(shown) {
		fmt.Fprintf(&b, "(%d earlier ones: cat %s)\n", len(denials)-len(shown), filepath.Join(m.Root(), ControlDirName, "denials"))
	}
	return Clean(b.String())
}

// replacedFile is the file a refused creation was to replace: the one
// file of named in the same directory, when the created file is not
// itself named; "" otherwise.
func replacedFile(d control.Denial, named []string) string {
	if d.Op != "create" || slices.Contains(named, d.Path) {
		return ""
	}
	meant := ""
	for _, n := range named {
		if path.Dir(n) != path.Dir(d.Path) {
			continue
		}
		if meant != "" && meant != n {
			return "" // more than one candidate: do not guess
		}
		meant = n
	}
	return meant
}

// maxNamedWords bounds how many words of a command are looked up as files.
const maxNamedWords = 64

// namedFiles lists the existing regular files under mountpoint that a
// tool call's command names, relative to the mount's root: the words of
// a shell command, unquoted, that are paths.
func namedFiles(mountpoint string, in *HookInput) []string {
	var ti struct {
		Command string `json:"command"`
		Cmd     string `json:"cmd"`
	}
	if len(in.ToolInput) == 0 || json.Unmarshal(in.ToolInput, &ti) != nil {
		return nil
	}
	cmd := ti.Command
	if cmd == "" {
		cmd = ti.Cmd
	}
	words := strings.FieldsFunc(cmd, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(";|&<>()", r) })
	var out []string
	for i, w := range words {
		if i >= maxNamedWords {
			break
		}
		w = strings.Trim(w, `'"`)
		if w == "" || strings.HasPrefix(w, "-") {
			continue
		}
		abs := w
		if !filepath.IsAbs(abs) {
			if in.Cwd == "" {
				continue
			}
			abs = filepath.Join(in.Cwd, w)
		}
		rel, err := filepath.Rel(mountpoint, abs)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if st, err := os.Lstat(abs); err == nil && st.Mode().IsRegular() && !slices.Contains(out, filepath.ToSlash(rel)) {
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out
}

// writeTarget is a path a tool call is about to change; op "" means
// create or open_write, whichever fits.
type writeTarget struct{ abs, op string }

// writeTargets lists the files a tool call would write: Claude Code's
// Write, Edit, MultiEdit and NotebookEdit, and Codex's apply_patch.
func writeTargets(in *HookInput) ([]writeTarget, error) {
	var ti struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Command      string `json:"command"`
	}
	if len(in.ToolInput) > 0 && string(in.ToolInput) != "null" {
		if err := json.Unmarshal(in.ToolInput, &ti); err != nil {
			// Codex's freeform apply_patch input may be a bare string.
			var s string
			if json.Unmarshal(in.ToolInput, &s) != nil {
				return nil, fmt.Errorf("tool_input of %s is neither an object nor a string: %w", in.ToolName, err)
			}
			ti.Command = s
		}
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) || in.Cwd == "" {
			return filepath.Clean(p)
		}
		return filepath.Join(in.Cwd, p)
	}
	var out []writeTarget
	switch in.ToolName {
	case "Write":
		if ti.FilePath != "" {
			out = append(out, writeTarget{abs: abs(ti.FilePath)})
		}
	case "Edit", "MultiEdit":
		if ti.FilePath != "" {
			out = append(out, writeTarget{abs: abs(ti.FilePath), op: "open_write"})
		}
	case "NotebookEdit":
		p := ti.NotebookPath
		if p == "" {
			p = ti.FilePath
		}
		if p != "" {
			out = append(out, writeTarget{abs: abs(p), op: "open_write"})
		}
	case "apply_patch":
		for _, pt := range PatchTargets(ti.Command) {
			out = append(out, writeTarget{abs: abs(pt.Path), op: pt.Op})
		}
	}
	for _, t := range out {
		if !filepath.IsAbs(t.abs) {
			return nil, fmt.Errorf("%s names the relative path %q and the hook input has no cwd", in.ToolName, t.abs)
		}
	}
	return out, nil
}

// PatchTarget is one file an apply_patch envelope changes.
type PatchTarget struct{ Path, Op string }

// PatchTargets reads the files of a Codex apply_patch envelope
// ("*** Add File: P", "*** Update File: P", "*** Delete File: P",
// "*** Move to: P").
func PatchTargets(patch string) []PatchTarget {
	var out []PatchTarget
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		for prefix, op := range map[string]string{"*** Add File: ": "create", "*** Update File: ": "open_write",
			"*** Delete File: ": "unlink", "*** Move to: ": "create"} {
			if p, ok := strings.CutPrefix(line, prefix); ok && strings.TrimSpace(p) != "" {
				out = append(out, PatchTarget{Path: strings.TrimSpace(p), Op: op})
			}
		}
	}
	return out
}
