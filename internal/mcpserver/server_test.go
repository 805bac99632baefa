package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentfs/intentfs/control"
)

// fakeMount is a mount with INT-001 (src/**) active and INT-002 (docs/**).
type fakeMount struct {
	active   string
	lessons  []string
	requests []string
}

func (f *fakeMount) Root() string { return "/ws" }
func (f *fakeMount) Intents() (string, error) {
	return "* INT-001 IN_PROGRESS api  scope: src/**\n", nil
}
func (f *fakeMount) Active() (string, error) { return f.active, nil }
func (f *fakeMount) Select(id string) error {
	if id == "INT-404" {
		return errors.New(`unknown intent "INT-404": defined intents are INT-001, INT-002`)
	}
	f.active = id
	return nil
}
func (f *fakeMount) Context() (string, error) {
	return "<intent_context id=\"" + f.active + "\"/>", nil
}
func (f *fakeMount) Status() (*control.Status, error) {
	return &control.Status{RecentDenials: []control.Denial{{Op: "create", Path: "docs/a.md", Code: "OUT_OF_SCOPE", Reason: "docs/a.md is outside"}}}, nil
}
func (f *fakeMount) DryRun(rel, op string) (*control.DryRunResult, error) {
	r := &control.DryRunResult{Path: rel, Op: op, ActiveIntent: f.active, CoveredBy: []control.IntentRef{}}
	if strings.HasPrefix(rel, "src/root") {
		r.Code, r.Reason, r.PolicyCode = control.CodeFilePermissions, rel+" belongs to root:root 0644; uid 1000 may not write it", "ALLOWED"
	} else if strings.HasPrefix(rel, "src/") {
		r.Allowed, r.Code = true, "ALLOWED"
	} else {
		r.Code, r.Reason = "OUT_OF_SCOPE", rel+" is outside the owned_scope of INT-001 (src/**)"
		r.CoveredBy = append(r.CoveredBy, control.IntentRef{ID: "INT-002", Name: "docs", Status: "IN_PROGRESS"})
	}
	return r, nil
}
func (f *fakeMount) Lesson(text string) error { f.lessons = append(f.lessons, text); return nil }
func (f *fakeMount) Guide() (string, error)   { return control.AgentGuide, nil }
func (f *fakeMount) RequestScope(paths []string, why string) error {
	f.requests = append(f.requests, strings.Join(paths, ",")+": "+why)
	return nil
}
func (f *fakeMount) Pending() (string, error) {
	return "3 scope_request intent=INT-001 paths=docs/** waiting=2s: docs\n", nil
}

func connect(t *testing.T, fm *fakeMount) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := New(fm, "test").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func textOf(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolsAndGuide(t *testing.T) {
	fm := &fakeMount{active: "INT-001"}
	cs := connect(t, fm)
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Name == "select_intent" && (strings.Contains(tl.Description, "does not exist") || !strings.Contains(tl.Description, "session")) {
			t.Errorf("select_intent does not say how a session's selection differs from the mount's: %s", tl.Description)
		}
	}
	slices.Sort(names)
	if want := []string{"check_path", "explain_denials", "get_context", "list_intents", "pending", "record_lesson", "request_scope", "select_intent"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	cases := []struct {
		tool    string
		args    map[string]any
		isError bool
		want    string
	}{
		{tool: "list_intents", want: "INT-001"},
		{tool: "check_path", args: map[string]any{"path": "src/a.go"}, want: "Allowed: create src/a.go"},
		{tool: "check_path", args: map[string]any{"path": "/ws/docs/a.md", "op": "open_write"}, want: "echo INT-002 > /ws/.intentfs/active"},
		{tool: "check_path", args: map[string]any{"path": "src/root.go"}, want: "permissions refuse this change, not intentfs's policy (create src/root.go, FILE_PERMISSIONS): src/root.go belongs to root:root 0644"},
		{tool: "check_path", args: map[string]any{"path": "/elsewhere/a"}, isError: true, want: "not inside the workspace"},
		{tool: "check_path", args: map[string]any{}, isError: true, want: "path"},
		{tool: "select_intent", args: map[string]any{"id": "INT-404"}, isError: true, want: "unknown intent"},
		{tool: "select_intent", args: map[string]any{"id": "INT-002"}, want: "INT-002 is now the active intent of the mount /ws for every process working in it outside a session"},
		{tool: "get_context", want: `id="INT-002"`},
		{tool: "explain_denials", want: "docs/a.md is outside"},
		{tool: "record_lesson", args: map[string]any{"text": "run make test"}, want: "Lesson recorded"},
		{tool: "record_lesson", args: map[string]any{"text": "  "}, isError: true, want: "needs some text"},
		{tool: "request_scope", args: map[string]any{"paths": []string{"docs/**"}, "why": "the API page"}, want: "Scope request filed for docs/**"},
		{tool: "request_scope", args: map[string]any{"paths": []string{"a b"}, "why": "x"}, isError: true, want: "without spaces"},
		{tool: "request_scope", args: map[string]any{"paths": []string{"docs/**"}, "why": "a\nb"}, isError: true, want: "one line"},
		{tool: "pending", want: "scope_request intent=INT-001"},
	}
	for _, c := range cases {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Errorf("%s %v: %v", c.tool, c.args, err)
			continue
		}
		if res.IsError != c.isError || !strings.Contains(textOf(res), c.want) {
			t.Errorf("%s %v: isError=%v %q, want isError=%v and %q", c.tool, c.args, res.IsError, textOf(res), c.isError, c.want)
		}
	}
	if len(fm.requests) != 1 || fm.requests[0] != "docs/**: the API page" {
		t.Errorf("scope requests %q", fm.requests)
	}
	if len(fm.lessons) != 1 || fm.active != "INT-002" {
		t.Errorf("lessons %v active %q", fm.lessons, fm.active)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "check_path", Arguments: map[string]any{"path": "docs/b.md"}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["allowed"] != false || sc["code"] != "OUT_OF_SCOPE" || !strings.Contains(sc["advice"].(string), "INT-002") {
		t.Errorf("structured answer %v", sc)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: GuideURI})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "Working in an intentfs workspace") {
		t.Errorf("guide resource: %v %+v", err, rr)
	}
}

// TestRequestScopePathsIsAnArray: clients that build arguments from the
// schema's one declared type (the MCP Inspector CLI among them) cannot
// send a list to a property typed ["null","array"].
func TestRequestScopePathsIsAnArray(t *testing.T) {
	cs := connect(t, &fakeMount{active: "INT-001"})
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name != "request_scope" {
			continue
		}
		b, err := json.Marshal(tl.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties map[string]struct {
				Type  any `json:"type"`
				Items struct {
					Type any `json:"type"`
				} `json:"items"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatal(err)
		}
		paths := schema.Properties["paths"]
		if paths.Type != "array" || paths.Items.Type != "string" {
			t.Errorf("request_scope paths schema: type %v items %v, want \"array\" of \"string\" (%s)", paths.Type, paths.Items.Type, b)
		}
		if !slices.Contains(schema.Required, "paths") || !slices.Contains(schema.Required, "why") {
			t.Errorf("request_scope required %v, want paths and why", schema.Required)
		}
		return
	}
	t.Fatal("no request_scope tool")
}

// sessionMount is a fakeMount whose caller works in a session.
type sessionMount struct{ fakeMount }

func (s *sessionMount) Status() (*control.Status, error) {
	return &control.Status{ActiveIntent: s.active, Session: &control.SessionInfo{ID: "s-1", SessionSpec: control.SessionSpec{Name: "claude"}}}, nil
}

func TestSelectIntentInASessionSaysOnlyTheSessionChanged(t *testing.T) {
	sm := &sessionMount{fakeMount{active: "INT-001"}}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := New(sm, "test").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "select_intent", Arguments: map[string]any{"id": "INT-002"}})
	if err != nil {
		t.Fatal(err)
	}
	got := textOf(res)
	if res.IsError || !strings.Contains(got, "INT-002 is now the active intent of your session s-1 (claude)") || strings.Contains(got, "every process") {
		t.Errorf("select_intent in a session said %q", got)
	}
}
