package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/intentfs/intentfs/internal/agentapi"
	"github.com/intentfs/intentfs/internal/agentclients"
	"github.com/intentfs/intentfs/internal/agentsim"
	"github.com/intentfs/intentfs/internal/textsafe"
)

// demoAgentTimeout bounds the agent's run in the demo: a scripted session
// takes seconds.
const demoAgentTimeout = 2 * time.Minute

// findDemoAgent finds the agent CLI the demo runs: on $PATH, else in the
// cache the real-agent tests fill (docs/real-agents.md). It never
// downloads: the demo works offline.
func findDemoAgent(agent string) (string, error) {
	if agent != "claude" {
		return "", usagef("--agent: the demo runs claude (Claude Code), not %q", agent)
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p, nil
	}
	c, err := agentclients.Pinned("claude")
	if err != nil {
		return "", err
	}
	p, err := c.Path()
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p, nil
	}
	return "", fmt.Errorf("no Claude Code on $PATH or in %s: install it (npm install -g @anthropic-ai/claude-code) or fetch the pinned one with `INTENTFS_REQUIRE_FUSE=1 go test -run TestRealClaudeCodeHooks ./integration/` (docs/real-agents.md)", textsafe.Escape(p))
}

// installDemoHooks writes intentfs's Claude Code hooks into the demo
// source's .claude/settings.json, before the mount starts.
func installDemoHooks(src string) error {
	merged, err := agentapi.MergeHooks(nil, agentapi.ClaudeHooks(defaultHookCommand("claude")), "claude")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(src, ".claude"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(src, ".claude", "settings.json"), merged, 0o644)
}

// demoAgentScript is what the scripted model does: a write the scope
// refuses, one it allows, and an answer.
func demoAgentScript(mnt string) []agentsim.Turn {
	return []agentsim.Turn{
		agentsim.Call("Write", map[string]any{"file_path": filepath.Join(mnt, "README.md"), "content": "# demo service\n\nNow with a greeting.\n"}),
		agentsim.Call("Write", map[string]any{"file_path": filepath.Join(mnt, "src", "greeting.txt"), "content": "hello, world\n"}),
		agentsim.Say("The greeting is in src/greeting.txt; the README is left to the docs team."),
	}
}

// runDemoAgent runs Claude Code in the mount against the scripted model
// and shows what the model asked for and what Claude Code told it.
func runDemoAgent(w io.Writer, claude, tmp, mnt string) error {
	script := demoAgentScript(mnt)
	model := agentsim.NewAnthropic(script...)
	defer model.Close()
	home := filepath.Join(tmp, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	fmt.Fprintf(w, "   Claude Code: %s\n   its hooks: .claude/settings.json (intentfs hook install claude)\n   the model: a script on %s that calls Write twice, then answers\n\n",
		textsafe.Escape(claude), model.URL())
	ctx, cancel := context.WithTimeout(context.Background(), demoAgentTimeout)
	defer cancel()
	// The command changes into the mount once it runs: this process
	// serves the mount, and must not wait on it before the exec.
	cmd := exec.CommandContext(ctx, "sh", "-c", `cd "$0" && exec "$@"`, mnt, "env", "-i",
		"PATH="+os.Getenv("PATH"), "HOME="+home, "TMPDIR="+home, "SHELL=/bin/sh",
		"ANTHROPIC_BASE_URL="+model.URL(), "ANTHROPIC_API_KEY=demo",
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		claude, "-p", "--permission-mode", "acceptEdits", "--output-format", "json", "--", "Add a greeting to the service.")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res struct {
		Result            string `json:"result"`
		PermissionDenials []struct {
			ToolName string `json:"tool_name"`
		} `json:"permission_denials"`
	}
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		return fmt.Errorf("running %s: %w (%v)\n%s", claude, errors.Join(err, jerr), ctx.Err(), textsafe.Escape(strings.TrimSpace(stderr.String())))
	}
	results := model.ToolResults()
	for i, r := range results {
		fmt.Fprintf(w, "   The model calls %s", r.Tool)
		if i < len(script) && len(script[i].Calls) == 1 {
			var in struct {
				FilePath string `json:"file_path"`
			}
			if b, err := json.Marshal(script[i].Calls[0].Input); err == nil && json.Unmarshal(b, &in) == nil && in.FilePath != "" {
				rel, _ := filepath.Rel(mnt, in.FilePath)
				fmt.Fprintf(w, " %s", rel)
			}
		}
		fmt.Fprintf(w, "; Claude Code tells it:\n%s\n\n", indent(wrapText(textsafe.Escape(r.Text), 76)))
	}
	fmt.Fprintf(w, "   Claude Code's result: %q, %d permission denial(s)\n", textsafe.Escape(res.Result), len(res.PermissionDenials))
	return nil
}

// wrapText breaks long lines at spaces, for a terminal.
func wrapText(s string, width int) string {
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		n := 0
		for j, word := range strings.Fields(line) {
			if j > 0 && n+1+len(word) > width {
				b.WriteByte('\n')
				n = 0
			} else if j > 0 {
				b.WriteByte(' ')
				n++
			}
			b.WriteString(word)
			n += len(word)
		}
	}
	return b.String()
}
