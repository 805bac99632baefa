package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/agentapi"
	"github.com/intentfs/intentfs/internal/mcpserver"
)

func mcpCmd() *command {
	return &command{
		name: "mcp", summary: "serve the MCP tools for agents (stdio)", usage: "[--mount MOUNTPOINT]",
		help: `Runs a Model Context Protocol server on stdin/stdout for the mount: tools
list_intents, select_intent, get_context, check_path, explain_denials and
record_lesson, and the agent guide as the resource intentfs://guide. It
talks to the mount through its .intentfs/ files, as the agent would, so it
works for an agent that runs as another user than the daemon.

The mount is --mount, else the intentfs mount containing the current
directory (MCP clients start servers in the project directory).

Examples:
  claude mcp add intentfs -- intentfs mcp --mount /workspace
  npx @modelcontextprotocol/inspector --cli intentfs mcp --mount /workspace --method tools/list`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint (default: the intentfs mount containing the current directory)")
		},
		run: func(a *app, args []string) error {
			if len(args) > 0 {
				return usagef("takes no arguments")
			}
			mp, err := agentMount(flagString(a, "mount"))
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return mcpserver.Serve(ctx, mcpserver.New(agentapi.FileMount{Mountpoint: mp}, version), &mcp.StdioTransport{})
		},
	}
}

// agentMount finds the mount an agent-side command serves: --mount, or
// the intentfs mount containing the current directory. It reads the
// mount table, not the registry, which the agent's user may not reach.
func agentMount(flag string) (string, error) {
	var loc agentapi.Locator
	dir := flag
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	mp, ok, err := loc.MountAt(abs)
	if err != nil {
		return "", fmt.Errorf("reading the mount table: %w", err)
	}
	if !ok || (flag != "" && mp != resolveDir(abs)) {
		if flag != "" {
			return "", noMountError{fmt.Errorf("%s is not an intentfs mount", abs)}
		}
		return "", noMountError{fmt.Errorf("no intentfs mount contains %s: run in the mount, or pass --mount", abs)}
	}
	return mp, nil
}

func resolveDir(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
