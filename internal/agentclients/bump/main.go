// Command bump pins the newest Claude Code and Codex from the npm
// registry in internal/agentclients/versions.txt.
//
// Usage, from the repository root:
//
//	go run ./internal/agentclients/bump            # both to their latest versions
//	go run ./internal/agentclients/bump claude=2.1.332 codex=0.169.0
//
// Then run the real-agent tests (see docs/real-agents.md): they fetch the
// new versions into the cache on first use.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"github.com/intentfs/intentfs/internal/agentclients"
)

// versionsPath is versions.txt relative to the repository root.
const versionsPath = "internal/agentclients/versions.txt"

// npmName is the package whose "latest" tag gives a client's version.
func npmName(client string) string {
	switch client {
	case "claude":
		return "@anthropic-ai/claude-code"
	case "codex":
		return "@openai/codex"
	}
	return ""
}

var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bump:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	want := map[string]string{}
	for _, a := range args {
		name, v, ok := strings.Cut(a, "=")
		if !ok || npmName(name) == "" || !versionRE.MatchString(v) {
			return fmt.Errorf("%q: want claude=X.Y.Z or codex=X.Y.Z", a)
		}
		want[name] = v
	}
	if len(args) == 0 {
		for _, name := range []string{"claude", "codex"} {
			pkg := npmName(name)
			out, err := exec.Command("npm", "view", pkg, "version").Output()
			if err != nil {
				return fmt.Errorf("npm view %s version: %w", pkg, err)
			}
			v := strings.TrimSpace(string(out))
			if !versionRE.MatchString(v) {
				return fmt.Errorf("npm view %s version printed %q, not a version", pkg, v)
			}
			want[name] = v
		}
	}
	old, err := os.ReadFile(versionsPath)
	if err != nil {
		return fmt.Errorf("%w (run this from the repository root)", err)
	}
	have, err := agentclients.ParseVersions(string(old))
	if err != nil {
		return err
	}
	lines := strings.Split(string(old), "\n")
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) == 2 && !strings.HasPrefix(f[0], "#") && want[f[0]] != "" {
			lines[i] = f[0] + " " + want[f[0]]
			if f[1] != want[f[0]] {
				fmt.Printf("%s %s -> %s\n", f[0], have[f[0]], want[f[0]])
			} else {
				fmt.Printf("%s %s (unchanged)\n", f[0], f[1])
			}
		}
	}
	return os.WriteFile(versionsPath, []byte(strings.Join(lines, "\n")), 0o644)
}
