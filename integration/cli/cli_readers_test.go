package cli

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// TestCLIReadersRefuseAgentShapedLedgers: a clone whose committed ledger
// is a symlink to /dev/urandom, a FIFO or a symlink to a file outside,
// or whose .orchestration is a symlink. Every CLI reader of the ledger
// (verify, log, diff, blame) finishes at once, refuses, and says why;
// none follows the link or blocks.
func TestCLIReadersRefuseAgentShapedLedgers(t *testing.T) {
	testenv.Serial(t)
	testenv.RequireFUSE(t) // root: the readers run as the human, often root
	outside := t.TempDir()
	testenv.WriteFile(t, filepath.Join(outside, "agent_trace.jsonl"), "{}\n")
	cases := []struct {
		name  string
		plant func(t *testing.T, repo string)
	}{
		{"ledger symlinked to /dev/urandom", func(t *testing.T, repo string) {
			if err := os.Symlink("/dev/urandom", filepath.Join(repo, ledger.FileName)); err != nil {
				t.Fatal(err)
			}
		}},
		{"ledger symlinked outside", func(t *testing.T, repo string) {
			if err := os.Symlink(filepath.Join(outside, "agent_trace.jsonl"), filepath.Join(repo, ledger.FileName)); err != nil {
				t.Fatal(err)
			}
		}},
		{"ledger is a FIFO", func(t *testing.T, repo string) {
			if err := syscall.Mkfifo(filepath.Join(repo, ledger.FileName), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"rotated ledger symlinked to /dev/zero", func(t *testing.T, repo string) {
			testenv.WriteFile(t, filepath.Join(repo, ledger.FileName), "")
			if err := os.Symlink("/dev/zero", filepath.Join(repo, policy.OrchestrationDir, "agent_trace.1.jsonl")); err != nil {
				t.Fatal(err)
			}
		}},
		{".orchestration symlinked outside", func(t *testing.T, repo string) {
			orch := filepath.Join(repo, policy.OrchestrationDir)
			if err := os.Rename(filepath.Join(orch, "active_intents.yaml"), filepath.Join(outside, "active_intents.yaml")); err != nil {
				t.Fatal(err)
			}
			os.Remove(orch)
			if err := os.Symlink(outside, orch); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testenv.NewCLI(t)
			repo := filepath.Join(c.Dir, "repo")
			testenv.WriteFile(t, filepath.Join(repo, policy.IntentsFile), testenv.ScopePolicy)
			testenv.WriteFile(t, filepath.Join(repo, "src/a.go"), "package a\n")
			tc.plant(t, repo)
			for _, args := range [][]string{
				{"verify", "--source", repo},
				{"log", "--source", repo},
				{"diff", "--source", repo, "src/a.go"},
				{"blame", "--source", repo, "src/a.go"},
			} {
				out, code := c.RunBounded(10*time.Second, args...)
				if code == 0 {
					t.Errorf("intentfs %s: exit 0 on a planted ledger:\n%.2000s", args[0], out)
				}
				if !strings.Contains(out, "symlink") && !strings.Contains(out, "not a regular file") {
					t.Errorf("intentfs %s does not say why:\n%.2000s", args[0], out)
				}
			}
		})
	}
}

// TestInitRefusesSymlinkedOrchestration: a clone whose .orchestration is
// committed as a symlink to a directory outside the tree. `intentfs init`
// (run by the human, often root) refuses and says why; nothing is
// written outside.
func TestInitRefusesSymlinkedOrchestration(t *testing.T) {
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	c := testenv.NewCLI(t)
	repo, outside := filepath.Join(c.Dir, "repo"), filepath.Join(c.Dir, "outside")
	for _, d := range []string{repo, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../outside", filepath.Join(repo, policy.OrchestrationDir)); err != nil {
		t.Fatal(err)
	}
	out, code := c.RunBounded(10*time.Second, "init", repo)
	if code == 0 {
		t.Errorf("init through a symlinked .orchestration: exit 0\n%s", out)
	}
	if !strings.Contains(out, "symlink") {
		t.Errorf("init does not say why:\n%s", out)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("init wrote outside the tree: %v", names)
	}
}

// TestDiffAndBlameEscapeAgentContent: the agent writes a file holding an
// OSC 52 clipboard write, a line erase and a carriage return, and a file
// whose name holds an escape. `intentfs diff` and `blame` show them
// escaped; no control byte reaches the reviewer's terminal.
func TestDiffAndBlameEscapeAgentContent(t *testing.T) {
	testenv.Serial(t)
	e := testenv.MountPrepared(t, testenv.ScopePolicy, "INT-002", map[string]string{"src/.keep": ""}, func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	const evil = `printf 'ok\n' > src/evil.txt && printf 'x\033]52;c;ZXZpbA==\007\033[2K\rforged\n' >> src/evil.txt && printf 'a\n' > "$(printf 'src/n\033[2Jame.txt')" && printf 'b\n' >> "$(printf 'src/n\033[2Jame.txt')"`
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, evil); err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	e.WaitRecord("the second write of src/evil.txt", func(r *ledger.Record) bool {
		return r.Path() == "src/evil.txt" && ledger.Str(r.Gov().PostHash) == e.Sha("src/evil.txt")
	})
	e.WaitRecord("the second write of the escape-named file", func(r *ledger.Record) bool {
		return r.Path() == "src/n\x1b[2Jame.txt" && ledger.Str(r.Gov().PostHash) == e.Sha("src/n\x1b[2Jame.txt")
	})
	c := testenv.NewCLI(t)
	for _, args := range [][]string{
		{"diff", "--source", e.Src, "src/evil.txt"},
		{"diff", "--source", e.Src, "--intent", "INT-002"},
		{"blame", "--source", e.Src, "src/evil.txt"},
	} {
		out, code := c.RunBounded(10*time.Second, args...)
		if code != 0 {
			t.Fatalf("intentfs %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		if i := strings.IndexAny(out, "\x1b\x07\r\u009b"); i >= 0 {
			t.Errorf("intentfs %s prints a raw control byte %q:\n%q", strings.Join(args, " "), out[i], out)
		}
		if !strings.Contains(out, `\x1b]52;c;ZXZpbA==\x07`) {
			t.Errorf("intentfs %s does not show the escape escaped:\n%q", strings.Join(args, " "), out)
		}
	}
}
