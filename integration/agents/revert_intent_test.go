package agents

import (
	"os/exec"

	"github.com/intentfs/intentfs/integration/testenv"

	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// TestRevertIsRecordedUnderTheRevertedIntent: `intentfs revert` records
// each step under the intent of the change it undoes, whether the daemon
// of a mount carries it out or the CLI does on an unmounted source.
func TestRevertIsRecordedUnderTheRevertedIntent(t *testing.T) {
	testenv.Parallel(t)
	for _, tc := range []struct {
		name    string
		offline bool
	}{
		{name: "mounted"},
		{name: "offline", offline: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, repo, ws := testenv.NewPolicyRepo(t, testenv.ScopePolicy)
			testenv.WriteFile(t, filepath.Join(repo, "src/app.go"), "package app\n")
			c.Must("mount", repo, ws, "--intent", "INT-001")
			t.Cleanup(func() { c.Run("unmount", ws); testenv.DetachMount(ws) })
			sh := exec.Command("sh", "-c", "sed -i 's/app/api/' src/app.go && echo new > src/new.go && mv src/new.go src/moved.go")
			sh.Dir = ws
			if out, err := sh.CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			testenv.WaitFor(t, func() bool {
				return strings.Contains(c.Must("log", "--source", repo, "--path", "src/moved.go"), "src/moved.go")
			})
			if tc.offline {
				c.Must("unmount", ws)
			}
			if out := c.Must("revert", "--source", repo, "--intent", "INT-001"); !strings.Contains(out, "reverted:") {
				t.Fatalf("revert:\n%s", out)
			}
			if !tc.offline {
				c.Must("unmount", ws) // flushes the ledger
			}

			intentOf := map[string]string{}
			var reverts []*ledger.Record
			err := ledger.Query(filepath.Join(repo, ledger.FileName), ledger.Filter{}, func(r *ledger.Record) error {
				intentOf[r.ID] = ledger.Str(r.Gov().IntentID)
				if r.Gov().Event == ledger.EventRevert {
					reverts = append(reverts, r)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// Two net changes: src/app.go rewritten through sed's temporary
			// file, and src/moved.go created under another name and moved;
			// a revert undoes each in one step.
			if len(reverts) != 2 {
				t.Fatalf("%d revert records, want one per net change (2)", len(reverts))
			}
			for _, r := range reverts {
				g := r.Gov()
				if got := ledger.Str(g.IntentID); got != "INT-001" || intentOf[g.RevertOf] != "INT-001" {
					t.Errorf("revert of %s (%s) recorded under intent %q; the reverted record's is %q, want both INT-001",
						g.RevertOf, r.Path(), got, intentOf[g.RevertOf])
				}
			}
		})
	}
}
