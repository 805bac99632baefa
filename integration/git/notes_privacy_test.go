package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"path/filepath"
	"strings"
	"testing"
)

// TestNotesLeaveSecretsAtHome: a note made after `sh -c '…' --token=…`
// wrote through the mount and the agent committed carries neither the
// token nor the absolute source path, while the local ledger keeps both;
// with notes.include: [cmdline, source] it carries them. Either way a
// fresh clone checks clean and verifies the notes' chain.
func TestNotesLeaveSecretsAtHome(t *testing.T) {
	testenv.Serial(t)
	tests := []struct {
		name     string
		extra    string
		included bool
	}{
		{"by default", "", false},
		{"opted in", "notes: {include: [cmdline, source]}\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, e, origin, base := testenv.GateRepoWith(t, tt.extra+testenv.NotesPolicy)
			src, mnt := e.Src, e.Mnt
			testenv.GitAs(t, mnt, `sh -c 'echo x >> src/f.go' --token=hunter2 && git add src/f.go && git commit -qm f`)
			commit := testenv.GitAs(t, src, "git rev-parse HEAD")
			var note string
			testenv.WaitFor(t, func() bool {
				note, _ = testenv.GitTry(src, "git notes --ref=intentfs show "+commit)
				return strings.Contains(note, `"commit":"`+commit+`"`)
			}, "the commit's note")
			if !strings.Contains(note, `"path":"src/f.go"`) || !strings.Contains(note, `"comm":"sh"`) || !strings.Contains(note, `"intent_id":"INT-001"`) {
				t.Fatalf("the note lacks what attribution needs:\n%s", note)
			}
			for _, secret := range []string{"hunter2", src} {
				if strings.Contains(note, secret) != tt.included {
					t.Errorf("the note carries %q: %v, want %v\n%s", secret, !tt.included, tt.included, note)
				}
			}
			if ledger := testenv.GitAs(t, src, "cat .orchestration/agent_trace.jsonl"); !strings.Contains(ledger, "--token=hunter2") || !strings.Contains(ledger, src) {
				t.Errorf("the local ledger lost the command line or the source")
			}
			c.Must("notes", "push", "--source", src)
			testenv.GitAs(t, src, "git push -q origin main")
			root := filepath.Dir(src)
			testenv.GitAs(t, root, "git clone -q "+origin+" fresh")
			fresh := filepath.Join(root, "fresh")
			c.Must("notes", "fetch", "--source", fresh)
			if out := c.Must("check", "--source", fresh, base+"..HEAD"); !strings.HasPrefix(out, "OK") {
				t.Errorf("check on the fresh clone:\n%s", out)
			}
			if out := c.Must("verify", "--notes", "--source", fresh); !strings.HasPrefix(lastLine(out), "OK") {
				t.Errorf("verify --notes on the fresh clone:\n%s", out)
			}
			if out := c.Must("verify", "--notes", "--source", src); !strings.HasPrefix(lastLine(out), "OK") {
				t.Errorf("verify --notes in the clone that wrote them:\n%s", out)
			}
		})
	}
}
