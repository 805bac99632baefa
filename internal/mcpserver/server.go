// Package mcpserver is intentfs's Model Context Protocol server: the
// tools an agent uses to work within intents (list, select, load the
// context, ask before writing, read why something was refused, record a
// lesson) and the agent guide as a resource. It talks to the mount the
// way the agent itself would, through agentapi.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/agentapi"
)

// GuideURI is the agent guide resource.
const GuideURI = "intentfs://guide"

// instructions tell the client, once, what the server is for.
const instructions = `This workspace is governed by intentfs: every file change is checked against the active intent's owned_scope and recorded. Call list_intents and select_intent before changing files, get_context to load the intent's scope and constraints, check_path before writing a file you are unsure about, and explain_denials after "Permission denied". Read the resource ` + GuideURI + ` for the full guide.`

// New returns a server for the mount m.
func New(m agentapi.Mount, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "intentfs", Version: version}, &mcp.ServerOptions{Instructions: instructions})
	h := handlers{m: m}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "list_intents", Annotations: readOnly,
		Description: "Lists the intents of this workspace, one line each: a * marks the active one, then id, status, name and owned_scope (the paths it lets you change)."},
		h.listIntents)
	mcp.AddTool(s, &mcp.Tool{Name: "select_intent", Annotations: &mcp.ToolAnnotations{IdempotentHint: true},
		Description: "Makes an intent the active one, so changes inside its owned_scope are allowed; a PENDING intent is started. " +
			"It does what writing the id to .intentfs/active does: inside an agent session (intentfs run) it selects the intent of that session only, and other sessions keep theirs; " +
			"outside a session it selects the intent of the whole mount, for every process working in it outside a session. The answer says which happened. " +
			`Give "none" to deselect. BLOCKED, COMPLETE and ARCHIVED intents cannot be selected, nor an intent another session holds; a session pinned to its intent by a human cannot select another.`},
		h.selectIntent)
	mcp.AddTool(s, &mcp.Tool{Name: "get_context", Annotations: readOnly,
		Description: "Returns the <intent_context> block of the active intent: scope, constraints, acceptance criteria, the files it touched, its recent changes and related specs."},
		h.getContext)
	mcp.AddTool(s, &mcp.Tool{Name: "check_path", Annotations: readOnly,
		Description: "Asks, without changing or recording anything, whether changing a path would be allowed now, and if not why and which intent covers it. " +
			"path is relative to the workspace root (the mount) or absolute inside it; op is the change (default: create if the file does not exist, else open_write). " +
			"code FILE_PERMISSIONS means the file's own owner, mode or ACL refuses your uid (the kernel's refusal, not intentfs's policy: no intent or scope request changes it; policy_code says what the policy would decide); any other refusal code is the policy's."},
		h.checkPath)
	mcp.AddTool(s, &mcp.Tool{Name: "explain_denials", Annotations: readOnly,
		Description: "Explains the most recent changes intentfs's policy refused (\"Permission denied\" / EACCES): operation, path, code, reason and what to do about each. " +
			"A \"Permission denied\" that is not listed here came from the file's own owner, mode or ACL: check_path on that file says FILE_PERMISSIONS and who owns it."},
		h.explainDenials)
	mcp.AddTool(s, &mcp.Tool{Name: "record_lesson",
		Description: "Records a lesson learned under the active intent, for the next agent: it is kept in .orchestration/CLAUDE.md and shown in the workspace's CLAUDE.md / AGENTS.md. One or two sentences; at most 4 KiB."},
		h.recordLesson)
	mcp.AddTool(s, &mcp.Tool{Name: "request_scope", InputSchema: scopeSchema(),
		Description: "Asks the human supervising you to add paths (globs relative to the workspace root, such as docs/** or src/cache.go) to the active intent's owned_scope, saying why. " +
			"Nothing changes until they approve it (intentfs approve ID); call pending to see whether it was decided. At most 16 paths; why at most 1 KiB, one line."},
		h.requestScope)
	mcp.AddTool(s, &mcp.Tool{Name: "pending", Annotations: readOnly,
		Description: "Lists what waits for a human in this workspace -- your changes held by an approval rule (your system call is waiting) and your scope requests -- and the recent decisions on them."},
		h.pending)
	s.AddResource(&mcp.Resource{URI: GuideURI, Name: "agent-guide", Title: "Working in an intentfs workspace", MIMEType: "text/markdown",
		Description: "How an agent works in an intentfs workspace (the mount's .intentfs/README.md)."}, h.guide)
	return s
}

type handlers struct{ m agentapi.Mount }

// NoArgs is the input of tools that take none.
type NoArgs struct{}

// SelectArgs is the input of select_intent.
type SelectArgs struct {
	ID string `json:"id" jsonschema:"the intent id, e.g. INT-001, or none to deselect"`
}

// CheckArgs is the input of check_path.
type CheckArgs struct {
	Path string `json:"path" jsonschema:"the file to change, relative to the workspace root or absolute inside the mount"`
	Op   string `json:"op,omitempty" jsonschema:"the change: create, open_write, truncate, unlink, mkdir, rmdir, chmod, symlink, ... (default: create or open_write)"`
}

// CheckAnswer is the structured answer of check_path.
type CheckAnswer struct {
	control.DryRunResult
	// Advice says what to do when the change would be refused.
	Advice string `json:"advice,omitempty"`
}

// DenialsArgs is the input of explain_denials.
type DenialsArgs struct {
	Limit int `json:"limit,omitempty" jsonschema:"how many of the most recent denials to explain (default 5, at most 20)"`
}

// LessonArgs is the input of record_lesson.
type LessonArgs struct {
	Text string `json:"text" jsonschema:"what you learned, in a sentence or two"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: agentapi.Clean(s)}}}
}

func (h handlers) listIntents(ctx context.Context, _ *mcp.CallToolRequest, _ NoArgs) (*mcp.CallToolResult, any, error) {
	s, err := h.m.Intents()
	if err != nil {
		return nil, nil, err
	}
	return text(s), nil, nil
}

func (h handlers) selectIntent(ctx context.Context, _ *mcp.CallToolRequest, in SelectArgs) (*mcp.CallToolResult, any, error) {
	id := strings.TrimSpace(in.ID)
	if id == "" {
		return nil, nil, errors.New(`give an intent id (see list_intents), or "none" to deselect`)
	}
	if id == "none" {
		id = ""
	}
	if err := h.m.Select(id); err != nil {
		return nil, nil, err
	}
	// The mount answers .intentfs/status with the reader's session, so
	// the status read after the selection says whose intent changed.
	var sess *control.SessionInfo
	if st, err := h.m.Status(); err == nil {
		sess = st.Session
	}
	if sess != nil {
		who := "your session " + sess.ID
		if sess.Name != "" {
			who += " (" + sess.Name + ")"
		}
		if id == "" {
			return text("No intent is active in " + who + ": every governed change you make is refused until one is selected. Other sessions and processes keep their intents."), nil, nil
		}
		return text(fmt.Sprintf("%s is now the active intent of %s; other sessions and processes keep theirs. Call get_context to load its scope and constraints.", id, who)), nil, nil
	}
	if id == "" {
		return text("No intent is active on the mount " + h.m.Root() + ": every governed change made outside a session is refused until one is selected."), nil, nil
	}
	return text(fmt.Sprintf("%s is now the active intent of the mount %s for every process working in it outside a session (sessions started with intentfs run keep their own). Call get_context to load its scope and constraints.", id, h.m.Root())), nil, nil
}

func (h handlers) getContext(ctx context.Context, _ *mcp.CallToolRequest, _ NoArgs) (*mcp.CallToolResult, any, error) {
	s, err := h.m.Context()
	if err != nil {
		return nil, nil, err
	}
	return text(s), nil, nil
}

func (h handlers) checkPath(ctx context.Context, _ *mcp.CallToolRequest, in CheckArgs) (*mcp.CallToolResult, CheckAnswer, error) {
	rel := in.Path
	if filepath.IsAbs(rel) {
		r, err := filepath.Rel(h.m.Root(), rel)
		if err != nil || r == ".." || strings.HasPrefix(r, "../") {
			return nil, CheckAnswer{}, fmt.Errorf("%s is not inside the workspace %s", in.Path, h.m.Root())
		}
		rel = r
	}
	op := in.Op
	if op == "" {
		op = "open_write"
		if !agentapi.ExistsIn(h.m.Root(), rel) {
			op = "create"
		}
	}
	res, err := h.m.DryRun(rel, op)
	if err != nil {
		return nil, CheckAnswer{}, err
	}
	ans := CheckAnswer{DryRunResult: *res}
	var msg string
	if res.Allowed {
		msg = fmt.Sprintf("Allowed: %s %s (%s).", res.Op, res.Path, res.Code)
	} else {
		ans.Advice = agentapi.Advice(h.m.Root(), res)
		msg = agentapi.DenyMessage(h.m.Root(), res)
	}
	return text(msg), ans, nil
}

func (h handlers) explainDenials(ctx context.Context, _ *mcp.CallToolRequest, in DenialsArgs) (*mcp.CallToolResult, any, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 5
	}
	limit = min(limit, 20)
	st, err := h.m.Status()
	if err != nil {
		return nil, nil, err
	}
	ds := st.RecentDenials
	if len(ds) == 0 {
		return text("No change has been refused recently."), nil, nil
	}
	if len(ds) > limit {
		ds = ds[len(ds)-limit:]
	}
	return text(agentapi.DenialsReport(h.m, ds)), nil, nil
}

func (h handlers) recordLesson(ctx context.Context, _ *mcp.CallToolRequest, in LessonArgs) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Text) == "" {
		return nil, nil, errors.New("a lesson needs some text")
	}
	if err := h.m.Lesson(in.Text); err != nil {
		return nil, nil, err
	}
	return text("Lesson recorded."), nil, nil
}

// ScopeArgs is the input of request_scope.
type ScopeArgs struct {
	Paths []string `json:"paths" jsonschema:"the globs to add to the owned_scope, relative to the workspace root"`
	Why   string   `json:"why" jsonschema:"why you need them, in one line"`
}

// scopeSchema is request_scope's input schema. The inferred one types
// paths as ["null","array"] (a Go slice may be nil), which clients that
// build an argument from a property's single declared type (the MCP
// Inspector CLI) cannot fill: paths is required and is a list.
func scopeSchema() *jsonschema.Schema {
	s, err := jsonschema.For[ScopeArgs](nil)
	if err != nil {
		panic(fmt.Sprintf("request_scope schema: %v", err)) // a static type: fails on every start, in every test
	}
	if p := s.Properties["paths"]; p != nil {
		p.Types, p.Type = nil, "array"
	}
	return s
}

func (h handlers) requestScope(ctx context.Context, _ *mcp.CallToolRequest, in ScopeArgs) (*mcp.CallToolResult, any, error) {
	if len(in.Paths) == 0 || strings.TrimSpace(in.Why) == "" {
		return nil, nil, errors.New("give the paths you need and why")
	}
	for _, p := range in.Paths {
		if p == "" || strings.ContainsAny(p, " \t\n") {
			return nil, nil, fmt.Errorf("path %q: a glob without spaces", p)
		}
	}
	if strings.ContainsAny(in.Why, "\n\r") {
		return nil, nil, errors.New("why must be one line")
	}
	if err := h.m.RequestScope(in.Paths, in.Why); err != nil {
		return nil, nil, err
	}
	return text("Scope request filed for " + strings.Join(in.Paths, ", ") + ". A human decides it; until then changes outside the scope are still refused. Call pending to follow it."), nil, nil
}

func (h handlers) pending(ctx context.Context, _ *mcp.CallToolRequest, _ NoArgs) (*mcp.CallToolResult, any, error) {
	s, err := h.m.Pending()
	if err != nil {
		return nil, nil, err
	}
	return text(s), nil, nil
}

func (h handlers) guide(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	g, err := h.m.Guide()
	if err != nil {
		g = control.AgentGuide
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: GuideURI, MIMEType: "text/markdown", Text: g}}}, nil
}
