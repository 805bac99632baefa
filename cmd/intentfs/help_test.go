package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestHelpExamplesUseRealFlags: every "intentfs …" line of every help
// text names only flags its command has, so a user who copies an example
// is not told the flag does not exist.
func TestHelpExamplesUseRealFlags(t *testing.T) {
	// Every command's flags, by full name ("intent complete").
	flagSets := map[string]*pflag.FlagSet{}
	var helps []string
	var collect func(prefix string, c *command)
	collect = func(prefix string, c *command) {
		name := strings.TrimSpace(prefix + " " + c.name)
		fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
		if c.flags != nil {
			c.flags(fs)
		}
		flagSets[name] = fs
		helps = append(helps, c.help)
		for _, sub := range c.subcommands {
			collect(name, sub)
		}
	}
	for _, c := range commands() {
		collect("", c)
	}
	for _, help := range helps {
		for _, line := range strings.Split(help, "\n") {
			line, _, _ = strings.Cut(strings.TrimSpace(line), "#")
			words := strings.Fields(line)
			if len(words) < 2 || words[0] != "intentfs" {
				continue
			}
			// The most specific command the line runs.
			name := words[1]
			if len(words) > 2 && flagSets[words[1]+" "+words[2]] != nil {
				name = words[1] + " " + words[2]
			}
			fs := flagSets[name]
			if fs == nil {
				t.Errorf("the example %q runs an unknown command", line)
				continue
			}
			for _, word := range words {
				flag, ok := strings.CutPrefix(word, "--")
				if !ok || flag == "" {
					continue
				}
				flag, _, _ = strings.Cut(flag, "=")
				if fs.Lookup(flag) == nil && flag != "help" {
					t.Errorf("the example %q uses --%s, which intentfs %s does not have", line, flag, name)
				}
			}
		}
	}
}

func TestTopLevelInvocations(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string // in stdout
		wantErr  string // in stderr
	}{
		{name: "no arguments is a usage error", args: nil, wantCode: exitUsage, wantErr: "Usage:\n  intentfs COMMAND"},
		{name: "--version", args: []string{"--version"}, wantCode: exitOK, wantOut: "intentfs " + version},
		{name: "-V", args: []string{"-V"}, wantCode: exitOK, wantOut: "intentfs " + version},
		{name: "version", args: []string{"version"}, wantCode: exitOK, wantOut: "intentfs " + version},
		{name: "--help", args: []string{"--help"}, wantCode: exitOK, wantOut: "Usage:\n  intentfs COMMAND"},
		{name: "unknown command", args: []string{"nope"}, wantCode: exitUsage, wantErr: `unknown command "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.wantCode || !strings.Contains(stdout.String(), tt.wantOut) || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Fatalf("run(%q) = %d\nstdout: %s\nstderr: %s", tt.args, code, stdout.String(), stderr.String())
			}
		})
	}
}

// TestTopLevelHelpAlignsSummaries: every command's summary starts in the
// same column, the longest name (agent-guide) included.
func TestTopLevelHelpAlignsSummaries(t *testing.T) {
	var out strings.Builder
	printTopUsage(&out, commands())
	col := -1
	for _, c := range commands() {
		prefix := "  " + c.name + " "
		for line := range strings.SplitSeq(out.String(), "\n") {
			if !strings.HasPrefix(line, prefix) || !strings.HasSuffix(line, c.summary) {
				continue
			}
			at := strings.Index(line, c.summary)
			if col == -1 {
				col = at
			}
			if at != col {
				t.Errorf("%s's summary starts at column %d, others at %d:\n%s", c.name, at, col, line)
			}
		}
	}
	if col == -1 {
		t.Fatal("no command listed")
	}
}
