package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
)

// TestLedgerReadersSeeTheEditJustMade: on the cached data path a write is
// recorded once its file's writes pause, so a reviewer who runs log,
// verify, diff or blame right after an edit would read a ledger without
// it (verify calls the file untraced). Each command that reads the
// ledger file first asks the mount's daemon to record what its writers
// have written. The edit and each reader run in one shell, with no wait
// between them: the reader starts well inside the writers' pause.
func TestLedgerReadersSeeTheEditJustMade(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
	testenv.WriteFile(t, filepath.Join(repo, "src/app.go"), "package app\n")
	c.Must("mount", repo, ws, "--intent", "INT-001", "--agent-files", "none", "--data-path", "cached")
	neutral := t.TempDir()
	t.Cleanup(func() { c.Dir = neutral; c.Run("unmount", ws); testenv.DetachMount(ws) })

	cases := []struct {
		name, edit string
		reader     []string
		want       []string
	}{
		{"log after a new file", "printf 'package app\\n' > src/new1.go", []string{"log", "--path", "src/new1.go"}, []string{"src/new1.go"}},
		{"verify after a new file", "printf 'package app\\n' > src/new2.go", []string{"verify"}, []string{"OK:"}},
		{"diff after an edit", "printf 'package app\\n\\nvar X = 3\\n' >> src/app.go", []string{"diff", "src/app.go"}, []string{"+var X = 3"}},
		{"blame after a new file", "printf 'package app\\nvar Y = 4\\n' > src/new3.go", []string{"blame", "src/new3.go"}, []string{"INT-001", "| var Y = 4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sh := exec.Command("sh", append([]string{"-c", tc.edit + ` && exec "$0" "$@"`, c.Bin}, tc.reader...)...)
			sh.Dir = ws
			sh.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+c.Runtime)
			out, err := sh.CombinedOutput()
			if err != nil {
				t.Fatalf("%s; intentfs %s: %v\n%s", tc.edit, strings.Join(tc.reader, " "), err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("intentfs %s right after %q lacks %q:\n%s", strings.Join(tc.reader, " "), tc.edit, w, out)
				}
			}
		})
	}
	// An agent still at work: its writes never pause for the writers'
	// 200 ms, so the file is in the ledger only if the reader has the
	// daemon record what was written so far, and the agent writes on.
	t.Run("log while the agent still writes", func(t *testing.T) {
		// A read first: from it on the kernel sends no OPEN, and the
		// file below is written through the daemon's writer, not a
		// handle whose release would record it.
		if _, err := os.ReadFile(filepath.Join(ws, "src/app.go")); err != nil {
			t.Fatal(err)
		}
		agent := exec.Command("sh", "-c", `i=0; while [ $i -lt 1500 ]; do echo "// $i" >> src/live.go; i=$((i+1)); sleep 0.02; done`)
		agent.Dir = ws
		if err := agent.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = agent.Process.Kill(); _ = agent.Wait() }()
		testenv.WaitFor(t, func() bool {
			b, _ := os.ReadFile(filepath.Join(repo, "src/live.go"))
			return len(b) > 0
		})
		if out := c.Must("log", "--source", repo, "--path", "src/live.go"); !strings.Contains(out, "src/live.go") {
			t.Fatalf("log while the agent writes src/live.go does not name it:\n%s", out)
		}
		// The agent writes on after the reader.
		before, _ := os.ReadFile(filepath.Join(repo, "src/live.go"))
		testenv.WaitFor(t, func() bool {
			b, _ := os.ReadFile(filepath.Join(repo, "src/live.go"))
			return len(b) > len(before)
		})
	})
}

// TestNonRootVerifyOfRootsMountSaysSudo: a user who verifies the source
// of a mount served by root's daemon cannot ask that daemon to record
// what is pending. When verify finds files the ledger does not match,
// it says so and names the command that can; on a clean tree it says
// nothing more.
func TestNonRootVerifyOfRootsMountSaysSudo(t *testing.T) {
	testenv.Parallel(t)
	c, repo, ws, userRuntime := rootMountForAUser(t, map[string]string{"src/app.go": "package app\n"}, "--intent", "INT-001", "--agent-files", "none")
	testenv.WriteFile(t, filepath.Join(ws, "src/in.go"), "package app\n")
	c.Must("status", "--mount", ws) // records the write before the clean verify below
	out, code := c.RunAs(otherUID, userRuntime, "verify", "--source", repo)
	if code != 0 || strings.Contains(out, "--mount") {
		t.Fatalf("verify of a clean tree as uid %d: exit %d:\n%s", otherUID, code, out)
	}
	// A change behind the ledger's back, for verify to find.
	testenv.WriteFile(t, filepath.Join(repo, "src/behind.go"), "package app\n")
	out, code = c.RunAs(otherUID, userRuntime, "verify", "--source", repo)
	if code != 1 || !strings.Contains(out, "untraced  src/behind.go") || !strings.Contains(out, "sudo intentfs verify --mount "+ws) {
		t.Fatalf("verify as uid %d: exit %d:\n%s", otherUID, code, out)
	}
}
