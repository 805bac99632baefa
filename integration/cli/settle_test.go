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
}
