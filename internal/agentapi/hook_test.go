package agentapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/control"
)

// fakeMount answers like a mount whose active intent owns src/**, with
// INT-002 owning docs/**.
type fakeMount struct {
	root    string
	denials []control.Denial
	asked   []string
}

func (f *fakeMount) Root() string             { return f.root }
func (f *fakeMount) Intents() (string, error) { return "* INT-001 ...\n", nil }
func (f *fakeMount) Active() (string, error)  { return "INT-001", nil }
func (f *fakeMount) Select(string) error      { return nil }
func (f *fakeMount) Context() (string, error) { return "<intent_context/>", nil }
func (f *fakeMount) Status() (*control.Status, error) {
	return &control.Status{RecentDenials: f.denials}, nil
}
func (f *fakeMount) Lesson(string) error                 { return nil }
func (f *fakeMount) Guide() (string, error)              { return "guide", nil }
func (f *fakeMount) RequestScope([]string, string) error { return nil }
func (f *fakeMount) Pending() (string, error)            { return "nothing waits for a human\n", nil }
func (f *fakeMount) DryRun(rel, op string) (*control.DryRunResult, error) {
	f.asked = append(f.asked, op+" "+rel)
	r := &control.DryRunResult{Path: rel, Op: op, ActiveIntent: "INT-001", CoveredBy: []control.IntentRef{}}
	switch {
	case strings.HasPrefix(rel, "src/root"):
		r.Code, r.Reason, r.PolicyCode = control.CodeFilePermissions, rel+" belongs to root:root 0644; uid 1000 may not write it", "ALLOWED"
	case strings.HasPrefix(rel, "src/"):
		r.Allowed, r.Code = true, "ALLOWED"
		r.CoveredBy = append(r.CoveredBy, control.IntentRef{ID: "INT-001", Name: "api", Status: "IN_PROGRESS"})
	case strings.HasPrefix(rel, "docs/root"):
		r.Code, r.Reason = "OUT_OF_SCOPE", rel+" is outside the owned_scope of INT-001 (src/**)"
		r.FilePermissions = rel + " belongs to root:root 0644; uid 1000 may not write it"
		r.CoveredBy = append(r.CoveredBy, control.IntentRef{ID: "INT-002", Name: "docs", Status: "IN_PROGRESS"})
	case strings.HasPrefix(rel, "docs/"):
		r.Code, r.Reason = "OUT_OF_SCOPE", rel+" is outside the owned_scope of INT-001 (src/**)"
		r.CoveredBy = append(r.CoveredBy, control.IntentRef{ID: "INT-002", Name: "docs", Status: "IN_PROGRESS"})
	default:
		r.Code, r.Reason = "OUT_OF_SCOPE", rel+" is outside the owned_scope of INT-001 (src/**)"
	}
	return r, nil
}

func newTestHook(t *testing.T) (*Hook, *fakeMount, string) {
	mnt := t.TempDir()
	fm := &fakeMount{root: mnt}
	h := &Hook{Locator: Locator{Mountpoints: func() ([]string, error) { return []string{mnt}, nil }},
		Open: func(string) Mount { return fm }, Cursors: &CursorStore{Dir: filepath.Join(t.TempDir(), "cursors")}}
	return h, fm, mnt
}

func TestHookPreToolUse(t *testing.T) {
	h, fm, mnt := newTestHook(t)
	if err := os.MkdirAll(filepath.Join(mnt, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "src/old.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, input string
		deny        bool
		want        []string // in the reason
		asked       string
	}{
		{name: "write in scope (new file)", input: `{"hook_event_name":"PreToolUse","cwd":"` + mnt + `","tool_name":"Write","tool_input":{"file_path":"src/new.go"}}`, asked: "create src/new.go"},
		{name: "edit in scope", input: `{"hook_event_name":"PreToolUse","cwd":"/","tool_name":"Edit","tool_input":{"file_path":"` + mnt + `/src/old.go"}}`, asked: "open_write src/old.go"},
		{name: "write covered by another intent", input: `{"hook_event_name":"PreToolUse","cwd":"` + mnt + `","tool_name":"Write","tool_input":{"file_path":"docs/a.md"}}`,
			deny: true, want: []string{"OUT_OF_SCOPE", "outside the owned_scope of INT-001", "INT-002", "echo INT-002 > " + mnt + "/.intentfs/active"}, asked: "create docs/a.md"},
		{name: "write nobody covers", input: `{"hook_event_name":"PreToolUse","cwd":"` + mnt + `","tool_name":"MultiEdit","tool_input":{"file_path":"README.md"}}`,
			deny: true, want: []string{"No intent covers README.md", "intentfs intent scope INT-001 --add"}, asked: "open_write README.md"},
		{name: "notebook", input: `{"hook_event_name":"PreToolUse","cwd":"` + mnt + `","tool_name":"NotebookEdit","tool_input":{"notebook_path":"docs/n.ipynb"}}`,
			deny: true, asked: "open_write docs/n.ipynb"},
		{name: "codex apply_patch, second file refused", input: `{"hook_event_name":"PreToolUse","cwd":"` + mnt + `","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Update File: src/old.go\n@@\n+x\n*** Delete File: docs/gone.md\n*** End Patch\n"}}`,
			deny: true, want: []string{"deleting docs/gone.md is refused"}, asked: "unlink docs/gone.md"},
		{name: "write the file's permissions refuse", input: `{"hook_event_name":"PreToolUse","cwd":"` + mnt + `","tool_name":"Write","tool_input":{"file_path":"src/root.go"}}`,
			deny: true, want: []string{"file system's own permissions, not intentfs's policy", "FILE_PERMISSIONS", "src/root.go belongs to root:root 0644", "not an intentfs decision", "intentfs doctor"}, asked: "create src/root.go"},
		{name: "write both the policy and the permissions refuse", input: `{"hook_event_name":"PreToolUse","cwd":"` + mnt + `","tool_name":"Write","tool_input":{"file_path":"docs/root.md"}}`,
			deny: true, want: []string{"OUT_OF_SCOPE", "echo INT-002 > ", "Even then the file's own permissions refuse your uid (docs/root.md belongs to root:root 0644"}, asked: "create docs/root.md"},
		{name: "outside any mount", input: `{"hook_event_name":"PreToolUse","cwd":"/","tool_name":"Write","tool_input":{"file_path":"/elsewhere/x"}}`},
		{name: "the control directory is not judged", input: `{"hook_event_name":"PreToolUse","cwd":"` + mnt + `","tool_name":"Write","tool_input":{"file_path":".intentfs/active"}}`},
		{name: "a read is not judged", input: `{"hook_event_name":"PreToolUse","cwd":"` + mnt + `","tool_name":"Read","tool_input":{"file_path":"docs/a.md"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fm.asked = nil
			in, err := ParseHookInput([]byte(c.input))
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Run(in)
			if err != nil {
				t.Fatal(err)
			}
			if (out != nil) != c.deny {
				t.Fatalf("output %+v, want deny=%v", out, c.deny)
			}
			if c.asked != "" && (len(fm.asked) == 0 || fm.asked[len(fm.asked)-1] != c.asked) {
				t.Errorf("asked %v, want last %q", fm.asked, c.asked)
			}
			if c.asked == "" && len(fm.asked) > 0 {
				t.Errorf("asked %v, want nothing", fm.asked)
			}
			if out == nil {
				return
			}
			hs := out.HookSpecificOutput
			if hs.HookEventName != "PreToolUse" || hs.PermissionDecision != "deny" {
				t.Errorf("got %+v", hs)
			}
			for _, w := range c.want {
				if !strings.Contains(hs.PermissionDecisionReason, w) {
					t.Errorf("reason lacks %q: %s", w, hs.PermissionDecisionReason)
				}
			}
		})
	}
}

func TestParseHookInputRefusesGarbage(t *testing.T) {
	for _, in := range []string{"", "not json", "[]", `{"tool_name":"Write"}`} {
		if _, err := ParseHookInput([]byte(in)); err == nil {
			t.Errorf("%q: parsed, want an error", in)
		}
	}
	h, _, mnt := newTestHook(t)
	in, err := ParseHookInput([]byte(`{"hook_event_name":"PreToolUse","cwd":"` + mnt + `","tool_name":"Write","tool_input":42}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Run(in); err == nil {
		t.Error("a numeric tool_input was accepted")
	}
}

func TestHookPostToolUseReportsEachDenialOnce(t *testing.T) {
	h, fm, mnt := newTestHook(t)
	now := time.Now()
	h.Now = func() time.Time { return now }
	fm.denials = []control.Denial{
		{Time: now.Add(-time.Hour), Op: "create", Path: "old.txt", Code: "OUT_OF_SCOPE", Reason: "too old to report"},
		{Time: now.Add(-time.Second), Op: "create", Path: "docs/\x1b[31mred.md", Code: "OUT_OF_SCOPE", Reason: "docs/red.md is outside"},
	}
	post := `{"session_id":"S","hook_event_name":"PostToolUse","cwd":"` + mnt + `","tool_name":"Bash","tool_input":{"command":"make"}}`
	in, _ := ParseHookInput([]byte(post))
	out, err := h.Run(in)
	if err != nil || out == nil {
		t.Fatalf("no report: %v", err)
	}
	ctx := out.HookSpecificOutput.AdditionalContext
	for _, w := range []string{"refused 1 change", "docs/?[31mred.md", "INT-002"} {
		if !strings.Contains(ctx, w) {
			t.Errorf("context lacks %q:\n%s", w, ctx)
		}
	}
	if strings.Contains(ctx, "too old") || strings.ContainsRune(ctx, 0x1b) {
		t.Errorf("old denial reported or escape not cleaned:\n%q", ctx)
	}
	if out.HookSpecificOutput.HookEventName != "PostToolUse" {
		t.Errorf("event %q", out.HookSpecificOutput.HookEventName)
	}
	if again, err := h.Run(in); err != nil || again != nil {
		t.Errorf("the same denial was reported twice: %+v %v", again, err)
	}
	fm.denials = append(fm.denials, control.Denial{Time: now.Add(time.Millisecond), Op: "unlink", Path: "x", Code: "OUT_OF_SCOPE", Reason: "r"})
	in.HookEventName = "PostToolUseFailure"
	if out, _ := h.Run(in); out == nil || !strings.Contains(out.HookSpecificOutput.AdditionalContext, "refused 1 change") ||
		out.HookSpecificOutput.HookEventName != "PostToolUseFailure" {
		t.Errorf("a new denial after a failure was not reported: %+v", out)
	}
}

// TestHookPostToolUseFailureExplainsFilePermissions: a write the kernel
// refused by the file's mode leaves no intentfs denial; the agent is told
// it was the file's permissions, not the policy.
func TestHookPostToolUseFailureExplainsFilePermissions(t *testing.T) {
	h, _, mnt := newTestHook(t)
	for _, c := range []struct {
		event, file string
		want        string
	}{
		{"PostToolUseFailure", "src/root.go", "src/root.go belongs to root:root 0644; uid 1000 may not write it"},
		{"PostToolUse", "src/root.go", ""},
		{"PostToolUseFailure", "src/mine.go", ""},
	} {
		in, err := ParseHookInput([]byte(`{"session_id":"S","hook_event_name":"` + c.event + `","cwd":"` + mnt + `","tool_name":"Write","tool_input":{"file_path":"` + c.file + `"}}`))
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if out != nil {
			got = out.HookSpecificOutput.AdditionalContext
		}
		if c.want == "" && got != "" || c.want != "" && (!strings.Contains(got, c.want) || !strings.Contains(got, "not intentfs's policy")) {
			t.Errorf("%s of %s: context %q, want %q", c.event, c.file, got, c.want)
		}
	}
}

func TestPatchTargets(t *testing.T) {
	got := PatchTargets("*** Begin Patch\r\n*** Add File: a/new.go\n+x\n*** Update File: b.go\n*** Move to: c.go\n*** Delete File: d.go\n*** End Patch")
	want := []PatchTarget{{"a/new.go", "create"}, {"b.go", "open_write"}, {"c.go", "create"}, {"d.go", "unlink"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %v, want %v", i, got[i], want[i])
		}
	}
}

func TestLocateFollowsSymlinksOutOfTheMount(t *testing.T) {
	mnt, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(mnt, "out")); err != nil {
		t.Fatal(err)
	}
	l := Locator{Mountpoints: func() ([]string, error) { return []string{mnt}, nil }}
	if _, ok, _ := l.Locate(filepath.Join(mnt, "out", "x")); ok {
		t.Error("a path that leaves the mount through a symlink was located in it")
	}
	if tg, ok, _ := l.Locate(filepath.Join(mnt, "new", "deep", "x")); !ok || tg.Rel != "new/deep/x" {
		t.Errorf("got %+v %v", tg, ok)
	}
}

// TestAdvice: what a refused agent is told to do depends on whether it
// may switch intents at all.
func TestAdvice(t *testing.T) {
	docs := control.IntentRef{ID: "INT-002", Name: "docs", Status: "IN_PROGRESS"}
	tests := []struct {
		name string
		r    control.DryRunResult
		want []string
		not  []string
	}{
		{name: "free to select", r: control.DryRunResult{Path: "docs/a.md", ActiveIntent: "INT-001", Code: "OUT_OF_SCOPE", CoveredBy: []control.IntentRef{docs}},
			want: []string{"echo INT-002 > /ws/.intentfs/active"}},
		{name: "pinned: no select advice", r: control.DryRunResult{Path: "docs/a.md", ActiveIntent: "INT-001", Code: "OUT_OF_SCOPE", CoveredBy: []control.IntentRef{docs}, Pinned: true},
			want: []string{"pinned to INT-001", "cannot switch", "> /ws/.intentfs/request"}, not: []string{"/ws/.intentfs/active"}},
		{name: "pinned, nothing covers it", r: control.DryRunResult{Path: "x.md", ActiveIntent: "INT-001", Code: "OUT_OF_SCOPE", Pinned: true},
			want: []string{"no intent covers x.md", "request_scope"}},
		{name: "protected wins over pinned", r: control.DryRunResult{Path: ".git/config", ActiveIntent: "INT-001", Code: "PROTECTED_PATH", Pinned: true},
			want: []string{"protected"}, not: []string{"request"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Advice("/ws", &tt.r)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("advice lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("advice has %q:\n%s", n, got)
				}
			}
		})
	}
}

func TestHookDenyReasonReadsAsPolicy(t *testing.T) {
	for _, c := range []struct {
		op, path, want string
	}{
		{"open_write", "README.md", "writing README.md is refused (OUT_OF_SCOPE). README.md is outside the scope. "},
		{"create", "docs/a.md", "creating docs/a.md is refused (OUT_OF_SCOPE). "},
		{"unlink", "old.txt", "deleting old.txt is refused (OUT_OF_SCOPE). "},
		{"mkdir", "d", "creating the directory d is refused (OUT_OF_SCOPE). "},
		{"something_new", "x", "changing x is refused (OUT_OF_SCOPE). "},
	} {
		r := &control.DryRunResult{Op: c.op, Path: c.path, Code: "OUT_OF_SCOPE", Reason: c.path + " is outside the scope.", ActiveIntent: "INT-001"}
		got := HookDenyReason("/ws", r)
		if !strings.HasPrefix(got, policyDenialPrefix+c.want) {
			t.Errorf("%s %s: %q\nwant it to begin %q", c.op, c.path, got, policyDenialPrefix+c.want)
		}
		if !strings.HasSuffix(got, Advice("/ws", r)) {
			t.Errorf("%s %s: %q lacks the advice", c.op, c.path, got)
		}
	}
}

func TestReplacedFileIsTheOneNamedBesideIt(t *testing.T) {
	for _, c := range []struct {
		op, path string
		named    []string
		want     string
	}{
		{"create", "sedAb12Cd", []string{"README.md"}, "README.md"},
		{"create", "docs/.x.swp", []string{"docs/a.md", "src/b.go"}, "docs/a.md"},
		{"create", "sedAb12Cd", []string{"README.md", "NOTES.md"}, ""}, // two candidates: no guess
		{"create", "new.txt", []string{"new.txt", "README.md"}, ""},    // the command named it
		{"unlink", "README.md", []string{"README.md"}, ""},
		{"create", "src/tmp1", []string{"README.md"}, ""}, // another directory
		{"create", "tmp1", nil, ""},
	} {
		got := replacedFile(control.Denial{Op: c.op, Path: c.path}, c.named)
		if got != c.want {
			t.Errorf("%s %s with %v named: %q, want %q", c.op, c.path, c.named, got, c.want)
		}
	}
}

func TestNamedFilesAreTheCommandsExistingFiles(t *testing.T) {
	mp := t.TempDir()
	for _, f := range []string{"README.md", "src/a.go"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mp, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mp, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("README.md", filepath.Join(mp, "link.md")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cwd, input string
		want       []string
	}{
		{mp, `{"command":"sed -i 's/a/b/' README.md"}`, []string{"README.md"}},
		{mp + "/src", `{"command":"sed -i -e s/x/y/ a.go ../README.md;cat missing.go"}`, []string{"src/a.go", "README.md"}},
		{mp, `{"cmd":"mv \"src/a.go\" /etc/passwd link.md src"}`, []string{"src/a.go"}}, // outside the mount, a symlink, a directory: not files here
		{mp, `{"file_path":"README.md"}`, nil},
		{"", `{"command":"rm README.md"}`, nil},
	} {
		got := namedFiles(mp, &HookInput{Cwd: c.cwd, ToolInput: json.RawMessage(c.input)})
		if !slices.Equal(got, c.want) {
			t.Errorf("%s in %s: %v, want %v", c.input, c.cwd, got, c.want)
		}
	}
}
