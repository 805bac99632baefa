package agents

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"

	"github.com/intentfs/intentfs/internal/agentsim"
	"github.com/intentfs/intentfs/ledger"
)

// containerImageEnv names the intentfs image the container tests of the
// real agents run in. .ci/container-test builds the image and sets it;
// building it here would add minutes to every run of the suite.
const containerImageEnv = "INTENTFS_CONTAINER_IMAGE"

// containerWorkspaceDir is where the image's entrypoint mounts the
// checkout: the paths the agent and the model see.
const containerWorkspaceDir = "/workspace"

// agentContainerImage is the image to run the real agents in, with podman
// able to run it. Without INTENTFS_CONTAINER_IMAGE the test skips (it is
// run by .ci/container-test, which builds the image); with it, a missing
// podman or image skips, or fails under INTENTFS_REQUIRE_FUSE=1.
func agentContainerImage(t *testing.T) string {
	t.Helper()
	image := os.Getenv(containerImageEnv)
	if image == "" {
		t.Skipf("skipping: %s names no image; .ci/container-test builds the image and runs this test (docs/real-agents.md)", containerImageEnv)
	}
	if _, err := exec.LookPath("podman"); err != nil {
		testenv.SkipOrFail(t, "podman is not installed: %v", err)
	}
	if out, err := exec.Command("podman", "image", "exists", image).CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, "podman has no image %s (%v %s): build it with .ci/container-test", image, err, out)
	}
	return image
}

// containerSource is a checkout owned by the agent user, as a host user's
// would be, holding testenv.AgentPolicy and seed, with intentfs's hooks for agent
// installed in it on the host (the hook command is the image's intentfs),
// before any container runs.
func containerSource(t *testing.T, agent string, seed map[string]string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "repo")
	testenv.WriteFile(t, filepath.Join(src, ".orchestration", "active_intents.yaml"), testenv.AgentPolicy)
	for p, content := range seed {
		testenv.WriteFile(t, filepath.Join(src, p), content)
	}
	out, err := testenv.CommandIn(src, testenv.IntentfsBinary(t), "hook", "install", agent, "--command", "intentfs hook "+agent).CombinedOutput()
	if err != nil {
		t.Fatalf("hook install %s: %v\n%s", agent, err, out)
	}
	if out, err := exec.Command("chown", "-R", "1000:1000", src).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	return src
}

// podmanRun is the command that runs argv as the agent's command in the
// image, on the host's network (the scripted model listens on the host's
// loopback), with the checkout src at /src and each of mounts (HOST:CTR
// or HOST:CTR:ro) bind-mounted, the session pinned to INT-001.
func podmanRun(image, src string, mounts []string, argv ...string) *exec.Cmd {
	// runc and explicit limits: what .ci/container-test needs on this
	// kernel's cgroup setup.
	args := []string{"--runtime", "runc", "run", "--rm", "--network", "host",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
		"--device", "/dev/fuse", "--cap-add", "SYS_ADMIN", "-v", src + ":/src"}
	if _, err := os.Stat("/sys/kernel/security/apparmor"); err == nil {
		args = append(args, "--security-opt", "apparmor=unconfined")
	}
	for _, m := range mounts {
		args = append(args, "-v", m)
	}
	args = append(args, image, "--intent", "INT-001", "--")
	return exec.Command("podman", append(args, argv...)...)
}

// verifySource runs intentfs verify on the host's checkout.
func verifySource(t *testing.T, src string) {
	t.Helper()
	if out, err := exec.Command(testenv.IntentfsBinary(t), "verify", "--source", src).CombinedOutput(); err != nil {
		t.Errorf("intentfs verify --source %s after the container: %v\n%s", src, err, out)
	}
}

// TestRealClaudeCodeInTheContainer runs the real Claude Code as the
// agent's command in intentfs's container image: the entrypoint mounts
// the checkout at /workspace and runs Claude Code in a session pinned to
// INT-001 as the unprivileged agent user, with the hooks the checkout's
// .claude/settings.json names and the MCP server its .mcp.json names,
// both the image's intentfs. An out-of-scope Write is refused and the
// model is told why in words that work in the pinned session; an
// in-scope Write lands and is in the host's ledger; the MCP server
// answers from inside the container; the checkout still verifies.
func TestRealClaudeCodeInTheContainer(t *testing.T) {
	// Serial: it runs podman and, in its container, the real Claude Code, a heavy runtime, under a 300 s timeout, which other packages' tests loading the machine stretch.
	testenv.Serial(t)
	image := agentContainerImage(t)
	mcpJSON, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"intentfs": map[string]any{"command": "intentfs", "args": []string{"mcp"}}}})
	if err != nil {
		t.Fatal(err)
	}
	src := containerSource(t, "claude", map[string]string{"README.md": "# readme\n", "src/old.go": "package old\n", ".mcp.json": string(mcpJSON)})
	claude := realClient(t, "claude")

	ws := containerWorkspaceDir
	model := agentsim.NewAnthropic(
		agentsim.Call("Write", map[string]any{"file_path": ws + "/README.md", "content": "# rewritten\n"}),
		agentsim.Call("Write", map[string]any{"file_path": ws + "/src/new.go", "content": "package src\n"}),
		agentsim.Call("mcp__intentfs__check_path", map[string]any{"path": "docs/guide.md"}),
		agentsim.Call("mcp__intentfs__list_intents", map[string]any{}),
		agentsim.Call("Bash", map[string]any{"command": "rm README.md", "description": "remove the readme"}),
		agentsim.Say("finished"),
	)
	defer model.Close()
	argv := claudeCommand("/usr/local/bin/claude", "/home/agent", model, "update the readme",
		"--settings", `{"enableAllProjectMcpServers":true}`, "--allowedTools", "mcp__intentfs")
	cmd := podmanRun(image, src, []string{claude + ":/usr/local/bin/claude:ro"}, argv...)
	res := claudeOutput(t, exec.Command("timeout", append([]string{"300"}, cmd.Args...)...))
	results := model.ToolResults()
	t.Logf("the model received:\n%s", agentsim.Transcript(results))
	if res.IsError || res.Result != "finished" {
		t.Errorf("claude's result: %+v", res)
	}

	wantResult(t, results, 0, "Write", true, "PreToolUse:Write hook error: "+policyDenial+
		"writing README.md is refused (OUT_OF_SCOPE). README.md is outside the owned_scope of INT-001 (src/**). "+
		"This session is pinned to INT-001 by the human, and no intent covers README.md. Leave the change to the human, or ask for the scope: "+
		"printf 'paths: README.md\\nwhy: REASON\\n' > "+ws+"/.intentfs/request (or the MCP tool request_scope).")
	wantResult(t, results, 1, "Write", false, "File created successfully at: "+ws+"/src/new.go (file state is current in your context — no need to Read it back)")
	if len(results) > 2 {
		var ans struct {
			Allowed bool
			Pinned  bool
			Code    string
			Path    string
			Advice  string
		}
		wantAdvice := "This session is pinned to INT-001 by the human, so it cannot switch to INT-002 \"Documentation\" (IN_PROGRESS), which covers docs/guide.md. " +
			"Leave the change to the human, or ask for the scope: printf 'paths: docs/guide.md\\nwhy: REASON\\n' > " + ws + "/.intentfs/request (or the MCP tool request_scope)."
		if err := json.Unmarshal([]byte(results[2].Text), &ans); err != nil || results[2].Tool != "mcp__intentfs__check_path" ||
			ans.Allowed || !ans.Pinned || ans.Code != "OUT_OF_SCOPE" || ans.Path != "docs/guide.md" || ans.Advice != wantAdvice {
			t.Errorf("check_path in the container: the model received %s %q (%v)", results[2].Tool, results[2].Text, err)
		}
	}
	wantResult(t, results, 3, "mcp__intentfs__list_intents", false,
		"* INT-001    IN_PROGRESS API work  scope: src/**\n  INT-002    IN_PROGRESS Documentation  scope: docs/**\n")
	wantResult(t, results, 4, "Bash", true, "Exit code 1\nrm: cannot remove 'README.md': Permission denied")
	if len(results) > 4 {
		want := "PostToolUseFailure:Bash hook additional context: intentfs refused 1 change(s) in " + ws + " (each listed EACCES is a policy decision, not a bug; a \"Permission denied\" not listed here came from the file's own owner, mode or ACL: ask " + ws + "/.intentfs/check):\n" +
			"- unlink README.md (OUT_OF_SCOPE): README.md is outside the owned_scope of INT-001 (src/**)\n" +
			"  What to do: This session is pinned to INT-001 by the human"
		if !strings.HasPrefix(results[4].Context, want) {
			t.Errorf("after the refused rm the model was told\n%q\nwant it to begin\n%q", results[4].Context, want)
		}
	}
	if len(res.PermissionDenials) != 1 || res.PermissionDenials[0].ToolName != "Write" {
		t.Errorf("claude lists the permission denials %+v, want the one Write the hook refused", res.PermissionDenials)
	}

	if b, _ := os.ReadFile(filepath.Join(src, "README.md")); string(b) != "# readme\n" {
		t.Errorf("README.md is now %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "src", "new.go")); string(b) != "package src\n" {
		t.Errorf("src/new.go is %q", b)
	}
	rec := ledgerRecord(t, src, "the container's write of src/new.go", func(r *ledger.Record) bool {
		return r.Gov().Event != ledger.EventDenied && len(r.Files) > 0 && r.Files[len(r.Files)-1].Path == "src/new.go"
	})
	if g := rec.Gov(); g.Process == nil || g.Process.Uid != 1000 || ledger.Str(g.IntentID) != "INT-001" || g.Session == nil {
		t.Errorf("the write is recorded as %+v", g)
	}
	ledgerRecord(t, src, "the container's refused rm", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventDenied && len(r.Files) > 0 && r.Files[0].Path == "README.md"
	})
	verifySource(t, src)
}

// TestRealCodexInTheContainer runs the real Codex as the agent's command
// in intentfs's container image, with the hooks the checkout's
// .codex/hooks.json names (the image's intentfs): apply_patch out of
// scope is refused before it runs, with advice that works in the pinned
// session; apply_patch in scope lands and is in the host's ledger.
func TestRealCodexInTheContainer(t *testing.T) {
	// Serial: it runs podman and, in its container, the real Codex under a 300 s timeout, which other packages' tests loading the machine stretch.
	testenv.Serial(t)
	image := agentContainerImage(t)
	src := containerSource(t, "codex", map[string]string{"README.md": "# readme\nold line\n", "src/old.go": "package old\n"})
	codex := realClient(t, "codex")
	// CODEX_HOME, with the config that names the scripted model, from the
	// host: the agent's home in the container starts empty.
	codexHome := agentHome(t)

	const updateReadme = "*** Begin Patch\n*** Update File: README.md\n@@\n-old line\n+new line\n*** End Patch\n"
	model := agentsim.NewOpenAI(
		agentsim.Call("apply_patch", updateReadme),
		agentsim.Call("apply_patch", "*** Begin Patch\n*** Add File: src/new.go\n+package src\n*** End Patch\n"),
		agentsim.Say("finished"),
	)
	defer model.Close()
	writeCodexConfig(t, codexHome, containerWorkspaceDir, model)
	argv := codexCommand("/usr/local/bin/codex", "/codex-home", "update the readme")
	cmd := podmanRun(image, src, []string{codex + ":/usr/local/bin/codex:ro", codexHome + ":/codex-home"}, argv...)
	events := codexOutput(t, exec.Command("timeout", append([]string{"300"}, cmd.Args...)...))
	results := model.ToolResults()
	t.Logf("codex events:\n%s\nthe model received:\n%s", events, agentsim.Transcript(results))

	ws := containerWorkspaceDir
	wantResult(t, results, 0, "apply_patch", false, "Command blocked by PreToolUse hook: "+policyDenial+
		"writing README.md is refused (OUT_OF_SCOPE). README.md is outside the owned_scope of INT-001 (src/**). "+
		"This session is pinned to INT-001 by the human, and no intent covers README.md. Leave the change to the human, or ask for the scope: "+
		"printf 'paths: README.md\\nwhy: REASON\\n' > "+ws+"/.intentfs/request (or the MCP tool request_scope). Command: "+updateReadme)
	wantResult(t, results, 1, "apply_patch", false, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA src/new.go\n")

	if b, _ := os.ReadFile(filepath.Join(src, "README.md")); string(b) != "# readme\nold line\n" {
		t.Errorf("README.md is now %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "src", "new.go")); string(b) != "package src\n" {
		t.Errorf("src/new.go is %q", b)
	}
	rec := ledgerRecord(t, src, "the container's write of src/new.go", func(r *ledger.Record) bool {
		return r.Gov().Event != ledger.EventDenied && len(r.Files) > 0 && r.Files[len(r.Files)-1].Path == "src/new.go"
	})
	if g := rec.Gov(); g.Process == nil || g.Process.Uid != 1000 || ledger.Str(g.IntentID) != "INT-001" || g.Session == nil {
		t.Errorf("the write is recorded as %+v", g)
	}
	verifySource(t, src)
}
