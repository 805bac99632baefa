package gitnotes

import (
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/intentfs/intentfs/internal/gitexec/gittest"
	"github.com/intentfs/intentfs/internal/ledgersign"
	"github.com/intentfs/intentfs/internal/sshsig"
	"github.com/intentfs/intentfs/ledger"
)

// appendRecords appends to the clone's ledger: "cp" a checkpoint signed
// by key, "deny" a denial, "write" an uncommitted write.
func (c *clone) appendRecords(key ssh.Signer, kinds ...string) {
	c.t.Helper()
	w, err := ledger.OpenWriter(c.ledgerPath(), ledger.WriterOptions{Source: c.dir, Version: "test"})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, k := range kinds {
		switch k {
		case "cp":
			w.Append(ledger.NewCheckpoint("test", ledgersign.NewSigner(rand.Reader, key).Sign))
		case "deny":
			w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventDenied, Path: "x", Validation: "FAIL", Code: "SCOPE_VIOLATION"}, "test"))
		case "write":
			w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventWrite, Path: "src/later.go", PostHash: gittest.Sha("later\n")}, "test"))
		}
	}
	if err := w.Close(); err != nil {
		c.t.Fatal(err)
	}
}

// TestSyncCarriesTrailingCheckpointsToHEAD: a checkpoint written after
// the last commit (as the mount writes one with every sync) reaches
// HEAD's note with the records that change no file before it, so what
// the sync attaches is signed; one after an uncommitted write waits, as
// the write does, and the notes stay a prefix of the chain.
func TestSyncCarriesTrailingCheckpointsToHEAD(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := ssh.NewSignerFromKey(priv)
	trust, err := sshsig.ParseAllowedSigners("signers", []byte("human@example.com "+string(ssh.MarshalAuthorizedKey(key.PublicKey()))))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		after    []string
		attached int // of the records after the commit
		signed   bool
	}{
		{"a checkpoint right after the commit", []string{"cp"}, 1, true},
		{"denials, then a checkpoint", []string{"deny", "deny", "cp"}, 3, true},
		{"a checkpoint, then a denial", []string{"cp", "deny"}, 1, true},
		{"an uncommitted write before the checkpoint", []string{"write", "cp"}, 0, false},
		{"no checkpoint", []string{"deny"}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, origin := setup(t)
			gittest.Git(t, root, "clone", "-q", origin, "a")
			a := newClone(t, filepath.Join(root, "a"))
			head := a.work("INT-001", "api", map[string]string{"src/api.go": "package api\n"})
			a.appendRecords(key, tc.after...)
			res := a.sync()
			// header, select, create: attached by content.
			if res.Attached != 3+tc.attached || res.Pending != len(tc.after)-tc.attached {
				t.Fatalf("attached %d, pending %d; want %d, %d", res.Attached, res.Pending, 3+tc.attached, len(tc.after)-tc.attached)
			}
			note := noteLines(t, a.dir, head)
			if got := strings.Contains(note, `"event":"checkpoint"`); got != tc.signed {
				t.Fatalf("HEAD's note holds a checkpoint: %v, want %v\n%s", got, tc.signed, note)
			}
			set := a.notes()
			if rep := VerifyChains(set); !rep.OK() {
				t.Fatalf("the notes' chain: %v", rep.Problems)
			}
			sigs := VerifySignatures(set, &ledgersign.Trust{File: "signers", Signers: trust})
			for i, l := range set.Lines {
				if l.Record.Path() == "src/api.go" && sigs.Signed(i) != tc.signed {
					t.Fatalf("the commit's record signed: %v, want %v", sigs.Signed(i), tc.signed)
				}
			}
		})
	}
}
