package agents

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentfs/intentfs/internal/sidecar"
	"github.com/intentfs/intentfs/ledger"
)

// asAgentUser is a command run as uid/gid 1000 with a private TMPDIR.
func asAgentUser(t *testing.T, dir string, name string, args ...string) *exec.Cmd {
	tmp := testenv.AgentDir(t, true)
	return testenv.CommandIn(dir, "setpriv", append([]string{"--reuid=1000", "--regid=1000", "--clear-groups", "env", "TMPDIR=" + tmp, "HOME=" + tmp, name}, args...)...)
}

// reachable lets uid 1000 reach the mountpoint by its absolute path, as
// an agent's tools (which get absolute paths) must: t.TempDir's parent
// is private to root.
func reachable(t *testing.T, e *testenv.Env) {
	t.Helper()
	if err := os.Chmod(filepath.Dir(e.Mnt), 0o755); err != nil {
		t.Fatal(err)
	}
}

func runHook(t *testing.T, bin, dir, input string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := asAgentUser(t, dir, bin, "hook", "claude")
	cmd.Stdin = strings.NewReader(input)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func TestClaudeHookAsTheAgentUser(t *testing.T) {
	testenv.Parallel(t)
	// The agent's uid may write its scope's files in the source, as in a
	// real setup (else the kernel refuses, and the hook says so).
	e := testenv.MountPrepared(t, testenv.AgentPolicy, "INT-001", map[string]string{"src/old.go": "package old\n"}, func(src string) {
		for _, p := range []string{"src", "src/old.go"} {
			if err := os.Chown(filepath.Join(src, p), 1000, 1000); err != nil {
				t.Fatal(err)
			}
		}
	})
	reachable(t, e)
	bin := testenv.AgentBinary(t)
	deniedBefore := testenv.CountEvents(e, ledger.EventDenied)

	pre := func(tool, path string) string {
		b, _ := json.Marshal(map[string]any{"session_id": "S1", "hook_event_name": "PreToolUse", "cwd": e.Mnt,
			"tool_name": tool, "tool_input": map[string]any{"file_path": path, "content": "x"}})
		return string(b)
	}
	// Out of scope, covered by INT-002: refused with the reason and the fix.
	out, errOut, code := runHook(t, bin, e.Mnt, pre("Write", "docs/guide.md"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ho struct {
		HookSpecificOutput struct {
			HookEventName, PermissionDecision, PermissionDecisionReason, AdditionalContext string
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &ho); err != nil {
		t.Fatalf("not JSON: %q", out)
	}
	r := ho.HookSpecificOutput
	if r.HookEventName != "PreToolUse" || r.PermissionDecision != "deny" ||
		!strings.Contains(r.PermissionDecisionReason, "outside the owned_scope of INT-001") ||
		!strings.Contains(r.PermissionDecisionReason, "echo INT-002 > "+e.Mnt+"/.intentfs/active") {
		t.Errorf("got %+v", r)
	}
	// In scope, and outside any mount: nothing to say.
	for _, in := range []string{pre("Edit", e.Mnt+"/src/old.go"), pre("Write", "src/new.go"), pre("Write", "/tmp/not-governed.txt")} {
		if out, errOut, code := runHook(t, bin, e.Mnt, in); out != "" || code != 0 {
			t.Errorf("%s: %q %q exit %d, want silence", in, out, errOut, code)
		}
	}
	// The checks were dry runs: nothing was recorded, nothing created.
	if n := testenv.CountEvents(e, ledger.EventDenied); n != deniedBefore {
		t.Errorf("the dry run recorded %d denials", n-deniedBefore)
	}
	if _, err := os.Lstat(filepath.Join(e.Src, "docs")); err == nil {
		t.Error("the check created docs/")
	}
	// Garbage in: a clear message and a non-blocking error code.
	if out, errOut, code := runHook(t, bin, e.Mnt, "{not json"); code != 1 || out != "" || !strings.Contains(errOut, "not the JSON object Claude Code sends") {
		t.Errorf("bad input: %q %q exit %d", out, errOut, code)
	}

	// A shell command runs into a denial; the next PostToolUse explains it, once.
	e.MustDeny("echo x > README.md")
	post := `{"session_id":"S1","hook_event_name":"PostToolUse","cwd":"` + e.Mnt + `","tool_name":"Bash","tool_input":{"command":"echo x > README.md"}}`
	// Both calls share a TMPDIR, where the hook remembers what it told.
	tmp := testenv.AgentDir(t, true)
	runPost := func() string {
		c := exec.Command("setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "env", "TMPDIR="+tmp, bin, "hook", "claude")
		c.Dir, c.Stdin = e.Mnt, strings.NewReader(post)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		o, err := c.Output()
		if err != nil || stderr.Len() > 0 {
			t.Fatalf("post hook: %v %s", err, stderr.String())
		}
		return string(o)
	}
	first := runPost()
	if err := json.Unmarshal([]byte(first), &ho); err != nil || ho.HookSpecificOutput.HookEventName != "PostToolUse" ||
		!strings.Contains(ho.HookSpecificOutput.AdditionalContext, "create README.md (OUT_OF_SCOPE)") {
		t.Errorf("post hook: %q", first)
	}
	if again := runPost(); again != "" {
		t.Errorf("the denial was reported twice: %q", again)
	}
}

func TestHookInstallMergesSettings(t *testing.T) {
	testenv.Parallel(t)
	c := testenv.NewCLI(t)
	settings := filepath.Join(c.Dir, ".claude", "settings.json")
	testenv.WriteFile(t, settings, `{"model":"opus","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./guard.sh"}]}]}}`)
	dry := c.Must("hook", "install", "claude", "--dry-run", "--command", "intentfs hook claude")
	if b, _ := os.ReadFile(settings); strings.Contains(string(b), "intentfs") {
		t.Error("--dry-run wrote the file")
	}
	c.Must("hook", "install", "claude", "--command", "intentfs hook claude")
	b, _ := os.ReadFile(settings)
	if string(b) != dry || !strings.Contains(string(b), "./guard.sh") || !strings.Contains(string(b), `"model": "opus"`) {
		t.Errorf("installed:\n%s\ndry run:\n%s", b, dry)
	}
	if out := c.Must("hook", "install", "claude", "--command", "intentfs hook claude"); !strings.Contains(out, "nothing changed") {
		t.Errorf("second install: %s", out)
	}
	testenv.WriteFile(t, filepath.Join(c.Dir, "bad", "settings.json"), `{"hooks":[]}`)
	if out, code := c.Run("hook", "install", "claude", "--settings", "bad/settings.json"); code != 1 || !strings.Contains(out, "bad/settings.json") {
		t.Errorf("bad settings: exit %d %s", code, out)
	}
}

// mcpSession starts `intentfs mcp` as the agent user and connects the
// SDK's client to it.
func mcpSession(t *testing.T, bin, mnt string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := asAgentUser(t, "/", bin, "mcp", "--mount", mnt)
	cmd.Stderr = io.Discard
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "integration", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// cliMount mounts repo at ws with the intentfs binary (its defaults, as a
// user gets them) and unmounts at the end.
func cliMount(t *testing.T, c *testenv.CLI, repo, ws string, args ...string) {
	t.Helper()
	c.Must(append([]string{"mount", repo, ws}, args...)...)
	t.Cleanup(func() {
		if out, code := c.Run("unmount", ws); code != 0 {
			t.Errorf("unmount: %s", out)
			testenv.DetachMount(ws)
		}
	})
	if err := os.Chmod(filepath.Dir(ws), 0o755); err != nil { // reachable for uid 1000
		t.Fatal(err)
	}
}

// ledgerRecord waits for a record of the ledger at repo that matches.
func ledgerRecord(t *testing.T, repo, what string, match func(*ledger.Record) bool) *ledger.Record {
	t.Helper()
	var found *ledger.Record
	testenv.WaitFor(t, func() bool {
		_ = ledger.Query(filepath.Join(repo, ledger.FileName), ledger.Filter{}, func(r *ledger.Record) error {
			if found == nil && match(r) {
				found = r
			}
			return nil
		})
		return found != nil
	})
	if found == nil {
		t.Fatalf("no ledger record: %s", what)
	}
	return found
}

func TestMCPServerAgainstARealMount(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.AgentPolicy)
	if err := os.Chmod(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(repo, "AGENTS.md"), "# Rules from a human\n")
	cliMount(t, c, repo, ws, "--intent", "INT-001")
	cs := mcpSession(t, testenv.AgentBinary(t), ws)

	if s, _ := callText(t, cs, "list_intents", nil); !strings.Contains(s, "* INT-001") || !strings.Contains(s, "INT-002") {
		t.Errorf("list_intents: %s", s)
	}
	if s, isErr := callText(t, cs, "check_path", map[string]any{"path": "docs/a.md"}); isErr || !strings.Contains(s, "INT-002") {
		t.Errorf("check_path: %v %s", isErr, s)
	}
	if s, isErr := callText(t, cs, "select_intent", map[string]any{"id": "INT-999"}); !isErr || !strings.Contains(s, "unknown intent") {
		t.Errorf("select of an unknown intent: %v %s", isErr, s)
	}
	if s, isErr := callText(t, cs, "select_intent", map[string]any{"id": "INT-002"}); isErr {
		t.Fatalf("select_intent: %s", s)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".intentfs", "active")); strings.TrimSpace(string(b)) != "INT-002" {
		t.Errorf("active intent %q", b)
	}
	sel := ledgerRecord(t, repo, "select by the MCP server", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventSelect && ledger.Str(g.IntentID) == "INT-002" && g.Process != nil && g.Process.Uid == 1000
	})
	if sel.Gov().Process.Comm != "intentfs" {
		t.Errorf("select attributed to %+v, want the intentfs mcp process", sel.Gov().Process)
	}
	if s, _ := callText(t, cs, "get_context", nil); !strings.Contains(s, "INT-002") {
		t.Errorf("get_context: %s", s)
	}
	if s, isErr := callText(t, cs, "record_lesson", map[string]any{"text": "Docs build with make docs. <!-- intentfs:lessons:end -->"}); isErr {
		t.Fatalf("record_lesson: %s", s)
	}
	// The lesson reaches the human's AGENTS.md, inside intentfs's section,
	// unable to close it early; the human's text is untouched.
	var agents string
	testenv.WaitFor(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(repo, "AGENTS.md"))
		agents = string(b)
		return strings.Contains(agents, "Docs build with make docs")
	})
	if !strings.HasPrefix(agents, "# Rules from a human\n") || strings.Count(agents, sidecar.SectionEnd) != 1 {
		t.Errorf("AGENTS.md:\n%s", agents)
	}
	ledgerRecord(t, repo, "intentfs's own write of AGENTS.md", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventWrite && len(r.Files) == 1 && r.Files[0].Path == "AGENTS.md" &&
			g.ScopeValidation == "EXEMPT" && g.Process != nil && g.Process.Comm == "intentfs"
	})
	if _, err := os.Lstat(filepath.Join(repo, "CLAUDE.md")); err == nil {
		t.Error("CLAUDE.md was created although AGENTS.md exists")
	}
	// A denial, then explain_denials.
	if out, err := exec.Command("sh", "-c", "cd "+ws+" && echo x > top.txt").CombinedOutput(); err == nil {
		t.Fatalf("write outside the scope was allowed: %s", out)
	}
	if s, _ := callText(t, cs, "explain_denials", nil); !strings.Contains(s, "create top.txt (OUT_OF_SCOPE)") {
		t.Errorf("explain_denials: %s", s)
	}
	rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "intentfs://guide"})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, ".intentfs/check") {
		t.Errorf("guide: %v %+v", err, rr)
	}
}

func TestMountCreatesClaudeMDWhenNoAgentFileExists(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.AgentPolicy)
	cliMount(t, c, repo, ws)
	b, err := os.ReadFile(filepath.Join(repo, "CLAUDE.md"))
	if err != nil || !strings.HasPrefix(string(b), sidecar.SectionBegin) || !strings.Contains(string(b), "Working in an intentfs workspace") {
		t.Errorf("CLAUDE.md: %v\n%s", err, b)
	}
	if _, err := os.Lstat(filepath.Join(repo, "AGENTS.md")); err == nil {
		t.Error("AGENTS.md was created")
	}
	// Inside the mount, install writes the source's settings (through the
	// mount the write would be governed, and refused).
	inst := exec.Command(c.Bin, "hook", "install", "claude", "--command", "intentfs hook claude")
	inst.Dir = ws
	if out, err := inst.CombinedOutput(); err != nil || !strings.Contains(string(out), "writing the file in its source") {
		t.Errorf("install inside the mount: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(repo, ".claude", "settings.json")); err != nil {
		t.Errorf("settings not written in the source: %v", err)
	}
	for _, name := range []string{"hook", "mcp"} {
		if out := c.Must(name, "--help"); !strings.Contains(out, "Usage: intentfs "+name) || !strings.Contains(out, "Example") {
			t.Errorf("%s --help:\n%s", name, out)
		}
	}
}

// inspectorVersions are the MCP Inspector releases the tests drive:
// 0.16.5 builds a --tool-arg's value from the property's declared type
// alone (so a list needs "type": "array"), as releases before 0.16.7 do;
// 2.12.0 is the current one.
func inspectorVersions() []string { return []string{"0.16.5", "2.12.0"} }

// inspectorCLI returns the MCP Inspector's launcher, installed from the
// npm registry once into a cache outside the repository; the test is
// skipped, saying why, when it cannot be fetched.
func inspectorCLI(t *testing.T, inspectorVersion string) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("skipping: npm is not installed, so the MCP Inspector cannot be fetched")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("skipping: no home directory for the Inspector's cache: %v", err)
	}
	dir := filepath.Join(home, ".cache", "intentfs-test", "inspector", inspectorVersion)
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Skipf("skipping: cannot create the Inspector's cache %s: %v", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--prefix", dir,
		"@modelcontextprotocol/inspector@"+inspectorVersion).CombinedOutput()
	if err != nil {
		t.Skipf("skipping: the MCP Inspector %s could not be fetched from the npm registry into %s: %v\n%s", inspectorVersion, dir, err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("skipping: npm installed the MCP Inspector without %s: %v", bin, err)
	}
	return bin
}

// TestMCPInspector drives the server with a client nobody here wrote: the
// MCP Inspector's CLI, which builds each argument from the tool's input
// schema.
func TestMCPInspector(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.AgentPolicy, "INT-001", nil)
	bin := testenv.AgentBinary(t)
	for _, v := range inspectorVersions() {
		t.Run(v, func(t *testing.T) { driveWithInspector(t, e, bin, inspectorCLI(t, v)) })
	}
}

func driveWithInspector(t *testing.T, e *testenv.Env, bin, inspector string) {
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, inspector, append([]string{"--cli", bin, "mcp", "--mount", e.Mnt}, args...)...)
		cmd.Dir = t.TempDir()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s\n%s", args, err, out, stderr.String())
		}
		return string(out)
	}
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal([]byte(run("--method", "tools/list")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 8 {
		t.Errorf("tools: %+v", list.Tools)
	}
	var call struct {
		Structured struct {
			Allowed   bool `json:"allowed"`
			CoveredBy []struct {
				ID string `json:"id"`
			} `json:"covered_by"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(run("--method", "tools/call", "--tool-name", "check_path", "--tool-arg", "path=docs/guide.md")), &call); err != nil {
		t.Fatal(err)
	}
	if call.Structured.Allowed || len(call.Structured.CoveredBy) != 1 || call.Structured.CoveredBy[0].ID != "INT-002" {
		t.Errorf("check_path through the inspector: %+v", call.Structured)
	}
	var scope struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	out := run("--method", "tools/call", "--tool-name", "request_scope", "--tool-arg", `paths=["docs/**"]`, "--tool-arg", "why=the API page")
	if err := json.Unmarshal([]byte(out), &scope); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if scope.IsError || len(scope.Content) != 1 || !strings.Contains(scope.Content[0].Text, "Scope request filed for docs/**") {
		t.Errorf("request_scope through the inspector: %s", out)
	}
	if p := e.MustSh(`cat .intentfs/pending`); !strings.Contains(p, "docs/**") {
		t.Errorf("the scope request is not pending:\n%s", p)
	}
}

func TestCheckFileIsADryRun(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.AgentPolicy, "INT-001", nil)
	before := testenv.CountEvents(e, ledger.EventDenied)
	out := e.MustSh(`exec 3<>.intentfs/check; printf 'docs/a.md' >&3; cat <&3`)
	var res struct {
		Path, Op, Code string
		Allowed        bool
		CoveredBy      []struct{ ID string } `json:"covered_by"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if res.Allowed || res.Code != "OUT_OF_SCOPE" || res.Op != "open_write" || len(res.CoveredBy) != 1 || res.CoveredBy[0].ID != "INT-002" {
		t.Errorf("got %+v", res)
	}
	out = e.MustSh(`exec 3<>.intentfs/check; printf 'create src/new.go' >&3; cat <&3`)
	if !strings.Contains(out, `"allowed": true`) || !strings.Contains(out, `"op": "create"`) {
		t.Errorf("in scope: %s", out)
	}
	if n := testenv.CountEvents(e, ledger.EventDenied); n != before {
		t.Errorf("checks recorded %d denials", n-before)
	}
	// A bad question fails (EINVAL; dash's printf says "I/O error") and
	// is recorded.
	if out, err := e.Sh(`exec 3<>.intentfs/check; printf '../../etc/passwd' >&3`); err == nil {
		t.Errorf("a path outside the workspace: %v %s", err, out)
	}
	e.WaitRecord("the refused question", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventDenied && r.Gov().Code == "INVALID_CONTROL_WRITE" && len(r.Files) == 1 && r.Files[0].Path == ".intentfs/check"
	})
	// The daemon's own answer: absolute paths in the mount, unknown ops.
	if r, err := e.D.DryRun(filepath.Join(e.Mnt, "src/x.go"), "", nil); err != nil || !r.Allowed || r.Path != "src/x.go" {
		t.Errorf("absolute path: %+v %v", r, err)
	}
	if _, err := e.D.DryRun("src/x.go", "explode", nil); err == nil {
		t.Error("an unknown op was accepted")
	}
	if out := e.MustSh(`cat .intentfs/check`); !strings.Contains(out, "Open this file read-write") {
		t.Errorf("plain read: %s", out)
	}
}

// TestAgentFileUpdatesKeepVerifyClean: the daemon's own rewrite of its
// section of CLAUDE.md (after a denial teaches a lesson) is recorded with
// the version it replaced kept, so verify stays clean; and the files
// intentfs keeps locally are ignored by git.
func TestAgentFileUpdatesKeepVerifyClean(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	testenv.WriteFile(t, filepath.Join(repo, "CLAUDE.md"), "# House rules\n\nTabs.\n")
	testenv.WriteFile(t, filepath.Join(repo, "README.md"), "readme\n")
	c.Must("mount", repo, ws, "--intent", "INT-001")
	t.Cleanup(func() { c.Run("unmount", ws); testenv.DetachMount(ws) })
	out, err := testenv.CommandIn(ws, "sh", "-c", "echo agent >> README.md").CombinedOutput()
	if err == nil {
		t.Fatalf("an out-of-scope append was allowed: %s", out)
	}
	testenv.WaitFor(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(repo, "CLAUDE.md"))
		return strings.Contains(string(b), "README.md")
	}, "the lesson in CLAUDE.md")
	c.Must("unmount", ws)
	if out, code := c.Run("verify", "--source", repo); code != 0 {
		t.Fatalf("verify after intentfs updated CLAUDE.md: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "CLAUDE.md")); !strings.HasPrefix(string(b), "# House rules\n\nTabs.\n") {
		t.Errorf("the human's text in CLAUDE.md changed:\n%s", b)
	}
}

// TestCreatedAgentFileIsNotCommitted: the CLAUDE.md the mount creates in
// a repository that had none is excluded locally, so the agent's
// `git add -A` does not commit intentfs's guide (a rebase onto an
// upstream without it then had to remove a file outside the scope, and
// stopped); one the repository tracks is left alone.
func TestCreatedAgentFileIsNotCommitted(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.AgentPolicy)
	testenv.WriteFile(t, filepath.Join(repo, "README.md"), "# r\n")
	if out, err := testenv.CommandIn(repo, "sh", "-c", "git init -q -b main . && git add README.md && git -c user.name=h -c user.email=h@x commit -qm base").CombinedOutput(); err != nil {
		t.Fatalf("git: %v\n%s", err, out)
	}
	cliMount(t, c, repo, ws)
	ex, err := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude"))
	if err != nil || !strings.Contains(string(ex), "\n/CLAUDE.md\n") {
		t.Fatalf(".git/info/exclude after the mount created CLAUDE.md: %v\n%s", err, ex)
	}
	out, err := testenv.CommandIn(ws, "git", "status", "--porcelain").CombinedOutput()
	if err != nil || strings.Contains(string(out), "CLAUDE.md") {
		t.Fatalf("git status in the mount shows the guide: %v\n%s", err, out)
	}
}
