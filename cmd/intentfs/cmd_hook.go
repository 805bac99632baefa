package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/accept"
	"github.com/intentfs/intentfs/internal/agentapi"
	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/policy"
)

// maxSettingsBytes bounds a settings file read for merging.
const maxSettingsBytes = 4 << 20

func hookCmd() *command {
	return &command{
		name: "hook", summary: "Claude Code and Codex hooks: check writes before the agent makes them", usage: "SUBCOMMAND",
		help: `Hooks let the agent learn about intents before it acts instead of from a
bare "Permission denied". Before a file write (Claude Code's Write, Edit,
MultiEdit, NotebookEdit; Codex's apply_patch) the hook asks the mount
whether the write would be allowed and, if not, refuses it with the reason
and which intent covers the path. After any tool that ran into a denial it
adds the denial reasons to the agent's context. Paths no intentfs mount
governs are left alone.

Examples:
  intentfs hook install claude           # merge the hooks into .claude/settings.json
  intentfs hook install codex            # merge them into .codex/hooks.json
  intentfs hook install claude --dry-run # print the result, change nothing`,
		subcommands: []*command{hookRunCmd("claude"), hookRunCmd("codex"), hookInstallCmd()},
	}
}

func hookRunCmd(agent string) *command {
	return &command{
		name: agent, summary: "answer one " + agentTitle(agent) + " hook event (JSON on stdin)", usage: "",
		help: fmt.Sprintf(`Reads one hook event from stdin, as %[1]s sends it, and answers on stdout:
  PreToolUse: {"hookSpecificOutput":{"hookEventName":"PreToolUse",
     "permissionDecision":"deny","permissionDecisionReason":"..."}} when the
     mount would refuse the write; nothing when it would allow it (the
     usual permission flow goes on) or no mount governs the path.
  PostToolUse, PostToolUseFailure: {"hookSpecificOutput":{...,
     "additionalContext":"..."}} with denials not reported before.
Bad input or an unreachable mount is reported on stderr with exit code 1,
which %[1]s treats as a non-blocking error: the mount still enforces.

Install it with "intentfs hook install %[2]s".

Example (by hand):
  echo '{"hook_event_name":"PreToolUse","cwd":"/workspace","tool_name":"Write",
         "tool_input":{"file_path":"src/x.go"}}' | intentfs hook %[2]s`, agentTitle(agent), agent),
		run: func(a *app, args []string) error {
			if len(args) > 0 {
				return usagef("takes no arguments; the event comes on stdin")
			}
			data, err := io.ReadAll(io.LimitReader(os.Stdin, 64<<20+1))
			if err != nil {
				return fmt.Errorf("reading the hook event from stdin: %w", err)
			}
			in, err := agentapi.ParseHookInput(data)
			if err != nil {
				return err
			}
			h := &agentapi.Hook{Agent: agent, Cursors: agentapi.DefaultCursorStore()}
			out, err := h.Run(in)
			if err != nil || out == nil {
				return err
			}
			enc := json.NewEncoder(a.stdout)
			enc.SetEscapeHTML(false)
			return enc.Encode(out)
		},
	}
}

func agentTitle(agent string) string {
	if agent == "codex" {
		return "Codex"
	}
	return "Claude Code"
}

func hookInstallCmd() *command {
	return &command{
		name: "install", summary: "merge intentfs's hooks into .claude/settings.json or .codex/hooks.json", usage: "claude|codex",
		help: `Adds intentfs's hooks to the agent's project settings, keeping every other
key and hook as it is; running it again changes nothing. The file is
created if missing and replaced atomically. Inside a mount the file is
written in the mounted source (the mount itself governs it). In a
workspace with a ledger, the write is recorded as accepted (see intentfs
accept), so intentfs verify does not report it.

  claude: .claude/settings.json -- PreToolUse on Write|Edit|MultiEdit|NotebookEdit,
          PostToolUse and PostToolUseFailure on every tool.
  codex:  .codex/hooks.json -- PreToolUse on apply_patch, PostToolUse on every
          tool. Codex runs hooks only with "hooks = true" under
          [features] in ~/.codex/config.toml ("codex_hooks" before Codex
          0.169), and only once they are trusted: review them with /hooks
          in Codex, or run "codex exec --dangerously-bypass-hook-trust".

Examples:
  intentfs hook install claude
  intentfs hook install claude --settings ~/.claude/settings.json
  intentfs hook install codex --dry-run`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("settings", "", "the settings file (default .claude/settings.json or .codex/hooks.json in the current directory)")
			fs.String("command", "", `the hook command (default "intentfs hook AGENT", with intentfs's absolute path if it is not the one on $PATH)`)
			fs.Bool("dry-run", false, "print the merged file instead of writing it")
		},
		run: func(a *app, args []string) error {
			if len(args) != 1 || (args[0] != "claude" && args[0] != "codex") {
				return usagef("name the agent: claude or codex")
			}
			agent := args[0]
			command := flagString(a, "command")
			if command == "" {
				command = defaultHookCommand(agent)
			}
			specs := agentapi.ClaudeHooks(command)
			if agent == "codex" {
				specs = agentapi.CodexHooks(command)
			}
			path, note, err := settingsPath(agent, flagString(a, "settings"))
			if err != nil {
				return err
			}
			old, err := readSettings(path)
			if err != nil {
				return err
			}
			merged, err := agentapi.MergeHooks(old, specs, agent)
			if err != nil {
				return fmt.Errorf("%s: %w (fix the file, or pass --settings another one)", path, err)
			}
			if dry, _ := a.fs.GetBool("dry-run"); dry {
				_, err := a.stdout.Write(merged)
				return err
			}
			if note != "" {
				fmt.Fprintln(a.stdout, note)
			}
			if bytes.Equal(old, merged) {
				fmt.Fprintf(a.stdout, "%s already has intentfs's hooks; nothing changed\n", path)
				return nil
			}
			if err := writeSettings(path, merged); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "installed intentfs's %s hooks in %s (command: %s)\n", agentTitle(agent), path, command)
			acceptInstalled(a, path, "intentfs hook install "+agent)
			if agent == "codex" {
				fmt.Fprintln(a.stdout, "Codex runs hooks only with this in ~/.codex/config.toml:\n  [features]\n  hooks = true\nand once you trust them: review them with /hooks in Codex.")
			}
			return nil
		},
	}
}

// defaultHookCommand is "intentfs hook AGENT" when $PATH finds this very
// binary, else the command with its absolute path.
func defaultHookCommand(agent string) string {
	self, err := os.Executable()
	if err != nil {
		return "intentfs hook " + agent
	}
	if onPath, err := exec.LookPath("intentfs"); err == nil {
		a, _ := filepath.EvalSymlinks(onPath)
		b, _ := filepath.EvalSymlinks(self)
		if a != "" && a == b {
			return "intentfs hook " + agent
		}
	}
	return shellQuote(self) + " hook " + agent
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`;&|<>()*?[]#~!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// settingsPath picks the file to merge into. Inside a mount the default
// file is the source's: through the mount, the write would be governed.
func settingsPath(agent, flag string) (path, note string, err error) {
	if flag != "" {
		p, err := filepath.Abs(flag)
		return p, "", err
	}
	rel := filepath.Join(".claude", "settings.json")
	if agent == "codex" {
		rel = filepath.Join(".codex", "hooks.json")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	// The kernel's mount table, not the registry: it names the source of
	// every intentfs mount, whoever started it.
	if list, err := mounts.IntentfsMounts(); err == nil {
		for i := len(list) - 1; i >= 0; i-- {
			e := list[i]
			if r, err := filepath.Rel(e.Mountpoint, cwd); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
				return filepath.Join(e.Source, r, rel), fmt.Sprintf("%s is inside the mount %s: writing the file in its source %s", cwd, e.Mountpoint, e.Source), nil
			}
		}
	}
	return filepath.Join(cwd, rel), "", nil
}

// readSettings reads a settings file that is a regular file, not a
// symlink; a missing one is empty.
func readSettings(path string) ([]byte, error) {
	b, err := safeio.ReadFile(filepath.Dir(path), filepath.Base(path), maxSettingsBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w (it must be a regular file, not a symlink)", path, err)
	}
	return b, nil
}

// acceptInstalled records, in the ledger of the workspace that holds
// path (if it has one), that the file as just written is the human's
// own: written in the source, outside the mount, it would otherwise make
// verify fail for ever. A failure to record is reported, not fatal: the
// hooks are installed, and intentfs accept can record it later.
func acceptInstalled(a *app, path, what string) {
	ws, ok := workspaceHolding(path)
	if !ok || !hasLocalLedger(ws) {
		return
	}
	rel, err := filepath.Rel(ws.source, path)
	if err != nil {
		return
	}
	// The file is written already; its acceptance is asked for from the
	// source, where this command wrote, not from inside the mount.
	if err = os.Chdir(ws.source); err == nil {
		_, err = acceptPaths(ws, accept.Request{Paths: []string{rel}, Reason: "written by " + what})
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "intentfs: could not record %s in the ledger (%v); verify will report it until you run: intentfs accept --source %s %s\n",
			textsafe.Escape(rel), err, textsafe.Escape(ws.source), textsafe.Escape(rel))
		return
	}
	fmt.Fprintf(a.stdout, "recorded %s in the ledger of %s as accepted\n", textsafe.Escape(rel), textsafe.Escape(ws.source))
}

// workspaceHolding finds the workspace (a directory with a policy) that
// holds path, if any.
func workspaceHolding(path string) (cliWorkspace, bool) {
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if policy.HasPolicy(dir) {
			ws, err := resolveWorkspace(dir)
			return ws, err == nil
		}
		if dir == "/" || dir == "." {
			return cliWorkspace{}, false
		}
	}
}

// writeSettings replaces path atomically, keeping its mode.
func writeSettings(path string, data []byte) error {
	return safeio.ReplaceBelow(path, data, 0o644)
}
