package agents

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/internal/agentclients"
	"github.com/intentfs/intentfs/internal/agentsim"
	"github.com/intentfs/intentfs/ledger"
)

// realClient returns the pinned agent CLI (claude or codex) where uid
// 1000 can run it, fetching it into the cache on first use.
func realClient(t *testing.T, name string) string {
	t.Helper()
	return realClientIn(t, name, testenv.AgentDir(t, false))
}

// realClientIn is realClient with the binary in dir. It skips when the
// client cannot be fetched (no npm, no registry), unless
// INTENTFS_REQUIRE_FUSE=1, where it fails: CI runs the real clients.
func realClientIn(t *testing.T, name, dir string) string {
	t.Helper()
	c, err := agentclients.Pinned(name)
	if err != nil {
		t.Fatal(err)
	}
	path, err := c.Fetch()
	if err != nil {
		if os.Getenv("INTENTFS_REQUIRE_FUSE") == "1" {
			t.Fatalf("the real %s %s is required (INTENTFS_REQUIRE_FUSE=1) but cannot be fetched: %v", name, c.Version, err)
		}
		t.Skipf("skipping: the real %s %s cannot be fetched: %v (see docs/real-agents.md)", name, c.Version, err)
	}
	// The cache may sit in root's home, out of the agent user's reach: a
	// hard link in a directory it can reach shares the binary's bytes.
	dst := filepath.Join(dir, name)
	if err := os.Link(path, dst); err != nil {
		copyFile(t, path, dst)
	}
	return dst
}

// copyFile copies an executable.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// agentHome is a HOME for one agent run, owned by the agent user.
func agentHome(t *testing.T) string {
	t.Helper()
	return testenv.AgentDir(t, true)
}

// claudeResult is the part of `claude -p --output-format json` a test reads.
type claudeResult struct {
	Result            string `json:"result"`
	IsError           bool   `json:"is_error"`
	NumTurns          int    `json:"num_turns"`
	PermissionDenials []struct {
		ToolName  string          `json:"tool_name"`
		ToolInput json.RawMessage `json:"tool_input"`
	} `json:"permission_denials"`
}

// claudeCommand is the command line that runs Claude Code once,
// non-interactively, against the scripted model, with a clean
// environment and HOME at home.
func claudeCommand(claude, home string, model *agentsim.Anthropic, prompt string, extra ...string) []string {
	args := []string{"env", "-i",
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home, "USER=agent", "SHELL=/bin/bash",
		"ANTHROPIC_BASE_URL=" + model.URL(), "ANTHROPIC_API_KEY=dummy",
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		claude, "-p", "--permission-mode", "acceptEdits", "--output-format", "json"}
	args = append(args, extra...)
	return append(args, "--", prompt)
}

// runClaude runs Claude Code once as the agent user in dir against the
// scripted model, and returns its result.
func runClaude(t *testing.T, claude, dir string, model *agentsim.Anthropic, prompt string, extra ...string) claudeResult {
	t.Helper()
	argv := append([]string{"120", "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"}, claudeCommand(claude, agentHome(t), model, prompt, extra...)...)
	return claudeOutput(t, testenv.CommandIn(dir, "timeout", argv...))
}

// claudeOutput runs a command that runs Claude Code and reads its result.
func claudeOutput(t *testing.T, cmd *exec.Cmd) claudeResult {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("claude ran %v", time.Since(start).Round(time.Millisecond))
	var res claudeResult
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	return res
}

// installClaudeHooks runs `intentfs hook install claude` in the mount, as
// a user does, with the hook command at bin.
func installClaudeHooks(t *testing.T, bin, ws string, env ...string) string {
	t.Helper()
	cmd := testenv.CommandIn(ws, bin, "hook", "install", "claude", "--command", bin+" hook claude")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hook install claude: %v\n%s", err, out)
	}
	return string(out)
}

// agentRepo is a policy repository whose files the agent user owns, as
// on a developer's machine, holding seed.
func agentRepo(t *testing.T, policyYAML string, seed map[string]string) (c *testenv.CLI, repo, ws string) {
	t.Helper()
	c, repo, ws = testenv.NewPolicyRepo(t, policyYAML)
	for p, content := range seed {
		testenv.WriteFile(t, filepath.Join(repo, p), content)
	}
	if out, err := exec.Command("chown", "-R", "1000:1000", repo).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	if err := os.Chmod(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	return c, repo, ws
}

// policyDenial is the start of what intentfs's PreToolUse hook tells
// Claude Code when the mount would refuse a write; Claude Code puts its
// "PreToolUse:TOOL hook error: " label before it.
const policyDenial = "Permission denied by intentfs policy (a decision, not a failure of the hook): "

// wantResult fails the test unless result i is from tool and its text is
// want exactly.
func wantResult(t *testing.T, results []agentsim.ToolResult, i int, tool string, isError bool, want string) {
	t.Helper()
	if i >= len(results) {
		t.Errorf("result %d (%s): the model got only %d results", i, tool, len(results))
		return
	}
	r := results[i]
	if r.Tool != tool || r.IsError != isError || r.Text != want {
		t.Errorf("result %d: the model received\n  %s (error=%v): %q\nwant\n  %s (error=%v): %q", i, r.Tool, r.IsError, r.Text, tool, isError, want)
	}
}

// TestRealClaudeCodeHooks runs the real Claude Code, with intentfs's
// hooks installed, in a mount whose active intent owns src/**: refused
// writes never reach the file system and the model is told why, as a
// permission decision; an in-scope write lands and is recorded; a shell
// command that runs into the mount's refusal is explained afterwards.
func TestRealClaudeCodeHooks(t *testing.T) {
	// Serial: it runs the real Claude Code, a heavy runtime, under a 120 s timeout, which other packages' tests loading the machine stretch.
	testenv.Serial(t)
	c, repo, ws := agentRepo(t, testenv.AgentPolicy, map[string]string{"README.md": "# readme\nold line\n", "src/old.go": "package old\n"})
	claude := realClient(t, "claude")
	cliMount(t, c, repo, ws, "--intent", "INT-001")
	bin := testenv.AgentBinary(t)
	// The file is written in the source, around the mount, and recorded
	// through the mount's daemon as the human's, so verify stays clean.
	if out := installClaudeHooks(t, bin, ws, "INTENTFS_RUNTIME_DIR="+c.Runtime); !strings.Contains(out, "recorded .claude/settings.json in the ledger") {
		t.Errorf("hook install said:\n%s", out)
	}

	model := agentsim.NewAnthropic(
		agentsim.Call("Write", map[string]any{"file_path": ws + "/README.md", "content": "# rewritten\n"}),
		agentsim.Call("Read", map[string]any{"file_path": ws + "/README.md"}),
		agentsim.Call("Edit", map[string]any{"file_path": ws + "/README.md", "old_string": "old line", "new_string": "new line"}),
		agentsim.Call("MultiEdit", map[string]any{"file_path": ws + "/README.md", "edits": []map[string]any{{"old_string": "old line", "new_string": "new line"}}}),
		agentsim.Call("Write", map[string]any{"file_path": ws + "/docs/guide.md", "content": "# guide\n"}),
		agentsim.Call("Write", map[string]any{"file_path": ws + "/src/new.go", "content": "package src\n"}),
		agentsim.Call("Bash", map[string]any{"command": "rm README.md", "description": "remove the readme"}),
		agentsim.Call("Bash", map[string]any{"command": "sed -i 's/old/new/' README.md", "description": "edit the readme"}),
		agentsim.Say("finished"),
	)
	defer model.Close()
	res := runClaude(t, claude, ws, model, "update the readme")
	results := model.ToolResults()
	t.Logf("the model received:\n%s", agentsim.Transcript(results))
	if res.IsError || res.Result != "finished" {
		t.Errorf("claude's result: %+v", res)
	}

	outOfScope := "writing README.md is refused (OUT_OF_SCOPE). README.md is outside the owned_scope of INT-001 (src/**). " +
		"No intent covers README.md. Stay inside the owned_scope of INT-001, or ask the human to widen it (intentfs intent scope INT-001 --add 'GLOB') " +
		"or to create an intent for this work. Do not work around it: other paths, links and renames are checked too."
	wantResult(t, results, 0, "Write", true, "PreToolUse:Write hook error: "+policyDenial+outOfScope)
	wantResult(t, results, 2, "Edit", true, "PreToolUse:Edit hook error: "+policyDenial+outOfScope)
	// MultiEdit is no longer a tool of its own in Claude Code 2.1: the
	// call is refused as an unknown tool, before any hook.
	if len(results) > 3 && strings.Contains(results[3].Text, "hook") {
		t.Errorf("MultiEdit: %q", results[3].Text)
	}
	wantResult(t, results, 4, "Write", true, "PreToolUse:Write hook error: "+policyDenial+
		"creating docs/guide.md is refused (OUT_OF_SCOPE). docs/guide.md is outside the owned_scope of INT-001 (src/**). "+
		"Select the intent that covers docs/guide.md: INT-002 \"Documentation\" (IN_PROGRESS). Run `echo INT-002 > "+ws+"/.intentfs/active` "+
		"(or the MCP tool select_intent), then load its context (cat "+ws+"/.intentfs/context). Switch only if that work is what you were asked to do.")
	wantResult(t, results, 5, "Write", false, "File created successfully at: "+ws+"/src/new.go (file state is current in your context — no need to Read it back)")
	wantResult(t, results, 6, "Bash", true, "Exit code 1\nrm: cannot remove 'README.md': Permission denied")
	if len(results) > 6 {
		want := "PostToolUseFailure:Bash hook additional context: intentfs refused 1 change(s) in " + ws + " (each listed EACCES is a policy decision, not a bug; a \"Permission denied\" not listed here came from the file's own owner, mode or ACL: ask " + ws + "/.intentfs/check):\n" +
			"- unlink README.md (OUT_OF_SCOPE): README.md is outside the owned_scope of INT-001 (src/**)\n" +
			"  What to do: No intent covers README.md."
		if !strings.HasPrefix(results[6].Context, want) {
			t.Errorf("after the refused rm the model was told\n%q\nwant it to begin\n%q", results[6].Context, want)
		}
	}
	// sed -i writes a new file beside README.md to rename over it: the
	// refusal names README.md, the file it meant, and says which temporary
	// was refused.
	if len(results) > 7 {
		r := results[7]
		tmp, _, _ := strings.Cut(strings.TrimPrefix(r.Text, "Exit code 4\nsed: couldn't open temporary file ./"), ":")
		want := "PostToolUseFailure:Bash hook additional context: intentfs refused 1 change(s) in " + ws + " (each listed EACCES is a policy decision, not a bug; a \"Permission denied\" not listed here came from the file's own owner, mode or ACL: ask " + ws + "/.intentfs/check):\n" +
			"- create README.md (OUT_OF_SCOPE): README.md is outside the owned_scope of INT-001 (src/**) (the refused creation of " + tmp + " is a temporary file of a save of README.md, made beside it to be renamed over it)\n" +
			"  What to do: No intent covers README.md. Stay inside the owned_scope of INT-001"
		if r.Tool != "Bash" || !strings.HasPrefix(r.Context, want) {
			t.Errorf("after the refused sed -i the model received %q, then\n%q\nwant it to begin\n%q", r.Text, r.Context, want)
		}
	}
	if len(res.PermissionDenials) != 3 {
		t.Errorf("claude lists %d permission denials, want the 3 the hook made: %+v", len(res.PermissionDenials), res.PermissionDenials)
	}

	// The file system: the refused changes did not happen.
	if b, _ := os.ReadFile(filepath.Join(repo, "README.md")); string(b) != "# readme\nold line\n" {
		t.Errorf("README.md is now %q", b)
	}
	if _, err := os.Lstat(filepath.Join(repo, "docs")); err == nil {
		t.Error("docs/ was created")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "src", "new.go")); string(b) != "package src\n" {
		t.Errorf("src/new.go is %q", b)
	}
	// The ledger: the in-scope write by the agent user, the rm refused.
	ledgerRecord(t, repo, "the agent's write of src/new.go", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event != ledger.EventDenied && len(r.Files) > 0 && r.Files[len(r.Files)-1].Path == "src/new.go" && g.Process != nil && g.Process.Uid == 1000
	})
	ledgerRecord(t, repo, "the refused rm", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventDenied && len(r.Files) > 0 && r.Files[0].Path == "README.md"
	})
}

// TestRealClaudeCodeUsesTheMCPServer runs the real Claude Code with
// intentfs's MCP server declared in the workspace's .mcp.json, and the
// model calling its tools as a model does: the answers it gets are the
// server's, and what the tools do reaches the mount.
func TestRealClaudeCodeUsesTheMCPServer(t *testing.T) {
	// Serial: it runs the real Claude Code, a heavy runtime, under a 120 s timeout, which other packages' tests loading the machine stretch.
	testenv.Serial(t)
	bin := testenv.AgentBinary(t)
	mcpJSON, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"intentfs": map[string]any{"command": bin, "args": []string{"mcp"}}}})
	if err != nil {
		t.Fatal(err)
	}
	c, repo, ws := agentRepo(t, testenv.AgentPolicy, map[string]string{".mcp.json": string(mcpJSON), "src/old.go": "package old\n"})
	claude := realClient(t, "claude")
	cliMount(t, c, repo, ws, "--intent", "INT-001")

	model := agentsim.NewAnthropic(
		agentsim.Call("mcp__intentfs__list_intents", map[string]any{}),
		agentsim.Call("mcp__intentfs__check_path", map[string]any{"path": "docs/guide.md"}),
		agentsim.Call("mcp__intentfs__request_scope", map[string]any{"paths": []string{"docs/**", "README.md"}, "why": "the API change needs its guide"}),
		agentsim.Call("mcp__intentfs__select_intent", map[string]any{"id": "INT-002"}),
		agentsim.Call("Write", map[string]any{"file_path": ws + "/docs/guide.md", "content": "# guide\n"}),
		agentsim.Say("finished"),
	)
	defer model.Close()
	res := runClaude(t, claude, ws, model, "document the API",
		"--settings", `{"enableAllProjectMcpServers":true}`, "--allowedTools", "mcp__intentfs")
	results := model.ToolResults()
	t.Logf("the model received:\n%s", agentsim.Transcript(results))
	if res.IsError || res.Result != "finished" {
		t.Errorf("claude's result: %+v", res)
	}

	wantResult(t, results, 0, "mcp__intentfs__list_intents", false,
		"* INT-001    IN_PROGRESS API work  scope: src/**\n  INT-002    IN_PROGRESS Documentation  scope: docs/**\n")
	// Claude Code hands the model check_path's structured answer.
	if len(results) > 1 {
		var ans struct {
			Allowed   bool
			Code      string
			Path      string
			Advice    string
			CoveredBy []struct{ ID string } `json:"covered_by"`
		}
		if err := json.Unmarshal([]byte(results[1].Text), &ans); err != nil || ans.Allowed || ans.Code != "OUT_OF_SCOPE" || ans.Path != "docs/guide.md" ||
			len(ans.CoveredBy) != 1 || ans.CoveredBy[0].ID != "INT-002" || !strings.HasPrefix(ans.Advice, "Select the intent that covers docs/guide.md: INT-002") {
			t.Errorf("check_path: the model received %q (%v)", results[1].Text, err)
		}
	}
	wantResult(t, results, 2, "mcp__intentfs__request_scope", false,
		"Scope request filed for docs/**, README.md. A human decides it; until then changes outside the scope are still refused. Call pending to follow it.")
	wantResult(t, results, 3, "mcp__intentfs__select_intent", false,
		"INT-002 is now the active intent of the mount "+ws+" for every process working in it outside a session (sessions started with intentfs run keep their own). Call get_context to load its scope and constraints.")
	wantResult(t, results, 4, "Write", false, "File created successfully at: "+ws+"/docs/guide.md (file state is current in your context — no need to Read it back)")

	// The mount: the request waits for the human with both globs, the
	// intent the model selected is active, and the write under it landed.
	if p := c.PendingOf(ws); len(p) != 1 || strings.Join(p[0].Paths, " ") != "docs/** README.md" || p[0].Why != "the API change needs its guide" {
		t.Errorf("pending: %+v", p)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".intentfs", "active")); strings.TrimSpace(string(b)) != "INT-002" {
		t.Errorf("active intent %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "docs", "guide.md")); string(b) != "# guide\n" {
		t.Errorf("docs/guide.md is %q", b)
	}
	ledgerRecord(t, repo, "the select made through the MCP server", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventSelect && ledger.Str(g.IntentID) == "INT-002" && g.Process != nil && g.Process.Uid == 1000
	})
	ledgerRecord(t, repo, "the write under INT-002", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event != ledger.EventDenied && ledger.Str(g.IntentID) == "INT-002" && len(r.Files) > 0 && r.Files[len(r.Files)-1].Path == "docs/guide.md"
	})
}

// codexModel is a model Codex knows the tools of: it offers apply_patch
// (a free-form tool) and exec_command to it.
const codexModel = "gpt-5.5"

// codexCommand is the command line that runs `codex exec` once against
// the scripted model, with a clean environment, HOME and CODEX_HOME at
// home, and intentfs's hooks enabled (writeCodexConfig).
func codexCommand(codex, home, prompt string) []string {
	return []string{"env", "-i",
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "CODEX_HOME=" + home, "TMPDIR=" + home, "USER=agent", "SHELL=/bin/bash",
		"SCRIPTED_API_KEY=dummy", "RUST_LOG=error",
		codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--dangerously-bypass-hook-trust", "--json", "--", prompt}
}

// writeCodexConfig writes home/config.toml: the scripted model as the
// provider, hooks on, dir trusted.
func writeCodexConfig(t *testing.T, home, dir string, model *agentsim.OpenAI) {
	t.Helper()
	config := `model = "` + codexModel + `"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "` + model.URL() + `/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"

[features]
hooks = true

[projects."` + dir + `"]
trust_level = "trusted"
`
	testenv.WriteFile(t, filepath.Join(home, "config.toml"), config)
	if err := os.Chown(filepath.Join(home, "config.toml"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
}

// runCodex runs `codex exec` once as the agent user in dir against the
// scripted model and returns its JSON event stream.
func runCodex(t *testing.T, codex, dir string, model *agentsim.OpenAI, prompt string) string {
	t.Helper()
	home := agentHome(t)
	writeCodexConfig(t, home, dir, model)
	argv := append([]string{"120", "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"}, codexCommand(codex, home, prompt)...)
	return codexOutput(t, testenv.CommandIn(dir, "timeout", argv...))
}

// codexOutput runs a command that runs Codex and returns its output.
func codexOutput(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("codex ran %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("codex: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	return string(out)
}

// installCodexHooks runs `intentfs hook install codex` in the mount.
func installCodexHooks(t *testing.T, bin, ws string) {
	t.Helper()
	out, err := testenv.CommandIn(ws, bin, "hook", "install", "codex", "--command", bin+" hook codex").CombinedOutput()
	if err != nil {
		t.Fatalf("hook install codex: %v\n%s", err, out)
	}
}

// TestRealCodexHooks runs the real Codex, with intentfs's hooks, in a
// mount whose active intent owns src/**: apply_patch in scope lands,
// apply_patch out of scope is refused before it runs, and the model is
// told why.
func TestRealCodexHooks(t *testing.T) {
	// Serial: it runs the real Codex under a 120 s timeout, which other packages' tests loading the machine stretch.
	testenv.Serial(t)
	c, repo, ws := agentRepo(t, testenv.AgentPolicy, map[string]string{"README.md": "# readme\nold line\n", "src/old.go": "package old\n"})
	codex := realClient(t, "codex")
	cliMount(t, c, repo, ws, "--intent", "INT-001")
	bin := testenv.AgentBinary(t)
	installCodexHooks(t, bin, ws)

	const updateReadme = "*** Begin Patch\n*** Update File: README.md\n@@\n-old line\n+new line\n*** End Patch\n"
	model := agentsim.NewOpenAI(
		agentsim.Call("apply_patch", updateReadme),
		agentsim.Call("apply_patch", "*** Begin Patch\n*** Add File: src/new.go\n+package src\n*** End Patch\n"),
		agentsim.Call("exec_command", map[string]any{"cmd": "rm README.md"}),
		agentsim.Say("finished"),
	)
	defer model.Close()
	events := runCodex(t, codex, ws, model, "update the readme")
	results := model.ToolResults()
	t.Logf("codex events:\n%s\nthe model received:\n%s", events, agentsim.Transcript(results))

	wantResult(t, results, 0, "apply_patch", false, "Command blocked by PreToolUse hook: "+policyDenial+
		"writing README.md is refused (OUT_OF_SCOPE). README.md is outside the owned_scope of INT-001 (src/**). "+
		"No intent covers README.md. Stay inside the owned_scope of INT-001, or ask the human to widen it (intentfs intent scope INT-001 --add 'GLOB') "+
		"or to create an intent for this work. Do not work around it: other paths, links and renames are checked too. Command: "+updateReadme)
	wantResult(t, results, 1, "apply_patch", false, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA src/new.go\n")
	if len(results) > 2 {
		r := results[2]
		want := "intentfs refused 1 change(s) in " + ws + " (each listed EACCES is a policy decision, not a bug; a \"Permission denied\" not listed here came from the file's own owner, mode or ACL: ask " + ws + "/.intentfs/check):\n- unlink README.md (OUT_OF_SCOPE): README.md is outside the owned_scope of INT-001 (src/**)\n  What to do: No intent covers README.md."
		if r.Tool != "exec_command" || !strings.HasSuffix(r.Text, "rm: cannot remove 'README.md': Permission denied\n") || !strings.HasPrefix(r.Context, want) {
			t.Errorf("after the refused rm the model received %q, then %q; want the refusal explained: %q", r.Text, r.Context, want)
		}
	}

	if b, _ := os.ReadFile(filepath.Join(repo, "README.md")); string(b) != "# readme\nold line\n" {
		t.Errorf("README.md is now %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "src", "new.go")); string(b) != "package src\n" {
		t.Errorf("src/new.go is %q", b)
	}
	ledgerRecord(t, repo, "codex's write of src/new.go", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event != ledger.EventDenied && len(r.Files) > 0 && r.Files[len(r.Files)-1].Path == "src/new.go" && g.Process != nil && g.Process.Uid == 1000
	})
	ledgerRecord(t, repo, "the refused rm", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventDenied && len(r.Files) > 0 && r.Files[0].Path == "README.md"
	})
}

// sessionSetup mounts a source outside /tmp, owned by the agent user and
// holding agentPolicy and seed, for sessions (intentfs run); tools is a
// directory outside /tmp (a session has a /tmp of its own) holding the
// intentfs binary, and home is the agent's HOME there.
func sessionSetup(t *testing.T, seed map[string]string) (e *testenv.Env, tools, home string) {
	t.Helper()
	testenv.RequireFUSE(t)
	e = testenv.MountAt(t, testenv.SourceOutsideTmp(t), testenv.AgentPolicy, "", seed, func(src string) {
		if out, err := exec.Command("chown", "-R", "1000:1000", src).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v\n%s", err, out)
		}
	})
	tools, err := os.MkdirTemp("/var/lib", "intentfs-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tools) })
	home = filepath.Join(tools, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(os.Chmod(tools, 0o755), os.Chown(home, 1000, 1000)); err != nil {
		t.Fatal(err)
	}
	copyFile(t, testenv.IntentfsBinary(t), filepath.Join(tools, "intentfs"))
	return e, tools, home
}

// TestRealClaudeCodeInASession runs the real Claude Code as the command
// of a sealed session (intentfs run) pinned to INT-001, with the hooks
// installed: the hook reaches the mount from inside the session, and the
// model is told what to do in words that work there (the session cannot
// switch intents: it asks for the scope through .intentfs/request).
func TestRealClaudeCodeInASession(t *testing.T) {
	// Serial: it runs the real Claude Code in an agent session, whose mount namespace copies every mount of the other tests (serving them past their unmount until the session ends).
	testenv.Serial(t)
	e, tools, home := sessionSetup(t, map[string]string{"README.md": "# readme\n", "src/old.go": "package old\n"})
	claude := realClientIn(t, "claude", tools)
	bin := filepath.Join(tools, "intentfs")
	installClaudeHooks(t, bin, e.Mnt)

	model := agentsim.NewAnthropic(
		agentsim.Call("Write", map[string]any{"file_path": e.Mnt + "/README.md", "content": "# rewritten\n"}),
		agentsim.Call("Write", map[string]any{"file_path": e.Mnt + "/src/new.go", "content": "package src\n"}),
		agentsim.Say("finished"),
	)
	defer model.Close()
	cmd := e.Session(append([]string{"--intent", "INT-001", "--"}, claudeCommand(claude, home, model, "update the readme")...)...)
	res := claudeOutput(t, cmd)
	results := model.ToolResults()
	t.Logf("the model received:\n%s", agentsim.Transcript(results))
	if res.IsError || res.Result != "finished" {
		t.Errorf("claude's result: %+v", res)
	}
	wantResult(t, results, 0, "Write", true, "PreToolUse:Write hook error: "+policyDenial+
		"writing README.md is refused (OUT_OF_SCOPE). README.md is outside the owned_scope of INT-001 (src/**). "+
		"This session is pinned to INT-001 by the human, and no intent covers README.md. Leave the change to the human, or ask for the scope: "+
		"printf 'paths: README.md\\nwhy: REASON\\n' > "+e.Mnt+"/.intentfs/request (or the MCP tool request_scope).")
	wantResult(t, results, 1, "Write", false, "File created successfully at: "+e.Mnt+"/src/new.go (file state is current in your context — no need to Read it back)")
	if b, _ := os.ReadFile(filepath.Join(e.Src, "README.md")); string(b) != "# readme\n" {
		t.Errorf("README.md is now %q", b)
	}
	rec := e.WaitRecord("the session's write of src/new.go", func(r *ledger.Record) bool {
		return r.Gov().Event != ledger.EventDenied && len(r.Files) > 0 && r.Files[len(r.Files)-1].Path == "src/new.go"
	})
	if g := rec.Gov(); g.Process == nil || g.Process.Uid != 1000 || ledger.Str(g.IntentID) != "INT-001" || g.Session == nil {
		t.Errorf("the write is recorded as %+v", g)
	}
}

// TestRealCodexInASession runs the real Codex as the command of a sealed
// session pinned to INT-001, with intentfs's hooks: apply_patch out of
// scope is refused before it runs, with advice that works in the
// session; apply_patch in scope lands, recorded under the session.
func TestRealCodexInASession(t *testing.T) {
	// Serial: it runs the real Codex in an agent session, whose mount namespace copies every mount of the other tests (serving them past their unmount until the session ends).
	testenv.Serial(t)
	e, tools, home := sessionSetup(t, map[string]string{"README.md": "# readme\nold line\n", "src/old.go": "package old\n"})
	codex := realClientIn(t, "codex", tools)
	bin := filepath.Join(tools, "intentfs")
	installCodexHooks(t, bin, e.Mnt)

	const updateReadme = "*** Begin Patch\n*** Update File: README.md\n@@\n-old line\n+new line\n*** End Patch\n"
	model := agentsim.NewOpenAI(
		agentsim.Call("apply_patch", updateReadme),
		agentsim.Call("apply_patch", "*** Begin Patch\n*** Add File: src/new.go\n+package src\n*** End Patch\n"),
		agentsim.Say("finished"),
	)
	defer model.Close()
	writeCodexConfig(t, home, e.Mnt, model)
	cmd := e.Session(append([]string{"--intent", "INT-001", "--"}, codexCommand(codex, home, "update the readme")...)...)
	events := codexOutput(t, cmd)
	results := model.ToolResults()
	t.Logf("codex events:\n%s\nthe model received:\n%s", events, agentsim.Transcript(results))

	wantResult(t, results, 0, "apply_patch", false, "Command blocked by PreToolUse hook: "+policyDenial+
		"writing README.md is refused (OUT_OF_SCOPE). README.md is outside the owned_scope of INT-001 (src/**). "+
		"This session is pinned to INT-001 by the human, and no intent covers README.md. Leave the change to the human, or ask for the scope: "+
		"printf 'paths: README.md\\nwhy: REASON\\n' > "+e.Mnt+"/.intentfs/request (or the MCP tool request_scope). Command: "+updateReadme)
	wantResult(t, results, 1, "apply_patch", false, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA src/new.go\n")
	if b, _ := os.ReadFile(filepath.Join(e.Src, "README.md")); string(b) != "# readme\nold line\n" {
		t.Errorf("README.md is now %q", b)
	}
	rec := e.WaitRecord("the session's write of src/new.go", func(r *ledger.Record) bool {
		return r.Gov().Event != ledger.EventDenied && len(r.Files) > 0 && r.Files[len(r.Files)-1].Path == "src/new.go"
	})
	if g := rec.Gov(); g.Process == nil || g.Process.Uid != 1000 || ledger.Str(g.IntentID) != "INT-001" || g.Session == nil {
		t.Errorf("the write is recorded as %+v", g)
	}
}

// TestDemoWithARealClaudeCode: `intentfs demo --agent claude` finds the
// cached Claude Code, runs it against the scripted model in the demo's
// mount, and shows the refusal as the model received it.
func TestDemoWithARealClaudeCode(t *testing.T) {
	// Serial: the demo runs the real Claude Code, a heavy runtime, within a two-minute bound, which other packages' tests loading the machine stretch.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	realClient(t, "claude") // fills the cache the demo looks in
	c := testenv.NewCLI(t)
	out := c.Must("demo", "--agent", "claude")
	for _, want := range []string{
		"4. Claude Code adds the greeting:",
		"The model calls Write README.md; Claude Code tells it:\n   PreToolUse:Write hook error: Permission denied by intentfs policy (a\n   decision, not a failure of the hook): writing README.md is refused",
		"The model calls Write src/greeting.txt; Claude Code tells it:\n   File created successfully at:",
		`Claude Code's result: "The greeting is in src/greeting.txt; the README is left to the docs team.", 1 permission denial(s)`,
		"$ cat README.md src/greeting.txt\n   # demo service\n   hello, world\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
}
