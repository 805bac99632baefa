package ledgersign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/intentfs/intentfs/internal/sshsig"
	"github.com/intentfs/intentfs/ledger"
)

func newKey(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func signersFile(t *testing.T, lines ...string) *Trust {
	t.Helper()
	a, err := sshsig.ParseAllowedSigners("allowed_signers", []byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return &Trust{File: "allowed_signers", Signers: a}
}

func signerLine(principal, options string, k ssh.Signer) string {
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k.PublicKey())))
	if options != "" {
		return principal + " " + options + " " + key
	}
	return principal + " " + key
}

// writeChain writes a ledger through the real writer: "w" a write
// record, a digit a checkpoint signed by those keys ("0": keys[0],
// "01": both), "-" a checkpoint signed by none. It returns the lines.
func writeChain(t *testing.T, steps []string, keys []ssh.Signer) [][]byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent_trace.jsonl")
	w, err := ledger.OpenWriter(path, ledger.WriterOptions{Source: "/src", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s == "w" {
			w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventWrite, Path: "README.md", PostHash: ledger.HashBytes([]byte("x"))}, "test"))
			continue
		}
		var ks []ssh.Signer
		for _, c := range strings.TrimPrefix(s, "-") {
			ks = append(ks, keys[c-'0'])
		}
		w.Append(ledger.NewCheckpoint("test", NewSigner(rand.Reader, ks...).Sign))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

func linksOf(t *testing.T, lines [][]byte) []Link {
	t.Helper()
	links := make([]Link, len(lines))
	for i, raw := range lines {
		var r ledger.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		links[i] = Link{Hash: ledger.LineHash(raw), Record: &r}
	}
	return links
}

// TestCoverDecidesWhichRecordsASignatureCovers: a record is signed only
// when it is, or comes before, a checkpoint of its chain signed by a key the signers file
// allows for the namespace at the checkpoint's time, reaches it through
// unbroken links.
func TestCoverDecidesWhichRecordsASignatureCovers(t *testing.T) {
	human, agent := newKey(t), newKey(t)
	keys := []ssh.Signer{human, agent}
	trustHuman := signerLine("human@example.com", "", human)
	cases := []struct {
		name    string
		steps   []string // after the header
		signers []string
		tamper  func(lines [][]byte) // changes the written lines
		// want lists, per line (the header first), whether it is signed.
		want string
	}{
		{name: "no checkpoint", steps: []string{"w", "w"}, signers: []string{trustHuman}, want: "---"},
		{name: "a checkpoint covers what is before it, not after", steps: []string{"w", "0", "w"}, signers: []string{trustHuman}, want: "SSS-"},
		{name: "a later checkpoint covers the rest", steps: []string{"w", "0", "w", "0"}, signers: []string{trustHuman}, want: "SSSSS"},
		{name: "a key not in the signers file", steps: []string{"w", "1", "w"}, signers: []string{trustHuman}, want: "----"},
		{name: "the agent's own key, signing as well", steps: []string{"w", "1"}, signers: []string{trustHuman}, want: "---"},
		{name: "an unsigned checkpoint", steps: []string{"w", "-"}, signers: []string{trustHuman}, want: "---"},
		{name: "rotation: old and new key sign, the new one trusted", steps: []string{"w", "01"}, signers: []string{signerLine("new@example.com", "", agent)}, want: "SSS"},
		{name: "rotation: old and new key sign, the old one trusted", steps: []string{"w", "01"}, signers: []string{trustHuman}, want: "SSS"},
		{name: "the key is allowed only another namespace", steps: []string{"w", "0"}, signers: []string{signerLine("human@example.com", `namespaces="git"`, human)}, want: "---"},
		{name: "the key is allowed the namespace by pattern", steps: []string{"w", "0"}, signers: []string{signerLine("human@example.com", `namespaces="git,intentfs-*"`, human)}, want: "SSS"},
		{name: "the key expired before the checkpoint", steps: []string{"w", "0"}, signers: []string{signerLine("human@example.com", "valid-before=20200101", human)}, want: "---"},
		{name: "the key is valid only later", steps: []string{"w", "0"}, signers: []string{signerLine("human@example.com", "valid-after=29990101", human)}, want: "---"},
		{name: "a changed record breaks the link: earlier records are not covered", steps: []string{"w", "w", "w", "0"}, signers: []string{trustHuman},
			tamper: func(l [][]byte) { l[1] = bytes.Replace(l[1], []byte("README.md"), []byte("READYOU.md"), 1) }, want: "--SSS"},
		{name: "a checkpoint whose head was changed does not count", steps: []string{"w", "0"}, signers: []string{trustHuman},
			tamper: func(l [][]byte) { l[2] = bytes.Replace(l[2], []byte(`"head":"sha256:`), []byte(`"head":"sha256:0`), 1) }, want: "---"},
		{name: "a checkpoint whose time was changed does not count", steps: []string{"w", "0"}, signers: []string{trustHuman},
			tamper: func(l [][]byte) { l[2] = bytes.Replace(l[2], []byte(`"timestamp":"2`), []byte(`"timestamp":"1`), 1) }, want: "---"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := writeChain(t, tc.steps, keys)
			if tc.tamper != nil {
				tc.tamper(lines)
			}
			cov := signersFile(t, tc.signers...).Cover(linksOf(t, lines))
			got := ""
			for _, b := range cov.By {
				if b != nil {
					got += "S"
				} else {
					got += "-"
				}
			}
			if got != tc.want {
				t.Errorf("signed %q, want %q (invalid: %v)", got, tc.want, cov.Invalid)
			}
		})
	}
}

// TestVerifyNamesTheSigner: a valid checkpoint names the principal the
// signers file gives its key; one of another chain does not count.
func TestVerifyNamesTheSigner(t *testing.T) {
	human := newKey(t)
	lines := writeChain(t, []string{"w", "0"}, []ssh.Signer{human})
	links := linksOf(t, lines)
	tr := signersFile(t, signerLine("human@example.com", "", human))
	chain := links[0].Record.Gov().Chain
	sig, err := tr.Verify(links[2].Record, chain)
	if err != nil || len(sig.Principals) != 1 || sig.Principals[0] != "human@example.com" || sig.Key != sshsig.Fingerprint(human.PublicKey()) {
		t.Fatalf("Verify: %+v, %v", sig, err)
	}
	if _, err := tr.Verify(links[2].Record, "another-chain"); err == nil {
		t.Fatal("a checkpoint of another chain verified")
	}
	if _, err := tr.Verify(links[1].Record, chain); err == nil {
		t.Fatal("a write record verified as a checkpoint")
	}
}
