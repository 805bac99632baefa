package agents

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// destroyPolicy holds every destruction of more than 1 KiB of content,
// and times out (a denial) after a second.
const destroyPolicy = `active_intents:
  - id: INT-001
    name: careful
    status: IN_PROGRESS
    owned_scope: ["**"]
    approvals:
      - name: big-delete
        ops: [delete]
        larger_than: 1KiB
        timeout: 1s
`

// TestApprovalRulesSeeWhatAChangeDestroys: a rule on deleting large files
// holds every change that destroys a large file's content, whatever the
// operation is called — truncation, an O_TRUNC open, a rename over it —
// with larger_than measured on the content destroyed, not on the file.
// Changes that destroy little or nothing pass.
func TestApprovalRulesSeeWhatAChangeDestroys(t *testing.T) {
	testenv.Serial(t)
	big := strings.Repeat("B", 4096)
	seed := map[string]string{"small": "s\n"}
	for _, n := range []string{"rm", "trunc", "otrunc", "over", "shrink", "grow", "append"} {
		seed["big_"+n] = big
	}
	e := testenv.MountPrepared(t, destroyPolicy, "INT-001", seed, func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	cases := []struct {
		name, cmd, file string
		held            bool
		after           string // the file's content after an allowed change
	}{
		{"unlink", "rm big_rm", "big_rm", true, ""},
		{"truncate to zero", "truncate -s0 big_trunc", "big_trunc", true, ""},
		{"O_TRUNC open", ": > big_otrunc", "big_otrunc", true, ""},
		{"rename over", "mv small big_over", "big_over", true, ""},
		{"truncate by 96 bytes", "truncate -s 4000 big_shrink", "big_shrink", false, big[:4000]},
		{"grow", "truncate -s 8192 big_grow", "big_grow", false, big + strings.Repeat("\x00", 4096)},
		{"append", "echo x >> big_append", "big_append", false, big + "x\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.T = t
			out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, c.cmd)
			got, _ := e.SrcContent(c.file)
			if c.held {
				if err == nil {
					t.Fatalf("%s destroyed 4 KiB with nothing held:\n%s", c.cmd, out)
				}
				if got != big {
					t.Fatalf("%s was refused but %s changed (%d bytes)", c.cmd, c.file, len(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v\n%s", c.cmd, err, out)
			}
			if got != c.after {
				t.Fatalf("%s: %s holds %d bytes, want %d", c.cmd, c.file, len(got), len(c.after))
			}
		})
	}
	e.T = t
	// A change through a handle is recorded at RELEASE, which the kernel
	// sends after close(2) returns: wait for the allowed ones.
	for _, f := range []string{"big_shrink", "big_grow", "big_append"} {
		e.WaitRecord("the record of "+f, func(r *ledger.Record) bool { return r.Path() == f && r.Gov().PostHash != nil })
	}
	if got, ok := e.SrcContent("small"); !ok || got != "s\n" {
		t.Errorf("small after the refused rename: %q, %v", got, ok)
	}
	testenv.VerifyClean(t, e.Src)
}
