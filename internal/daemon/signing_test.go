package daemon

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/intentfs/intentfs/internal/ledgersign"
	"github.com/intentfs/intentfs/internal/sshsig"
	"github.com/intentfs/intentfs/ledger"
)

// writeKey writes a new ed25519 private key, mode 0600, and returns its
// public key.
func writeKey(t *testing.T, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestLoadSigningKeysRefusesKeysTheMountServes: a key inside the source
// or the mountpoint, or with a second link, is refused before anything
// is mounted.
func TestLoadSigningKeysRefusesKeysTheMountServes(t *testing.T) {
	src, mnt, outside := t.TempDir(), t.TempDir(), t.TempDir()
	good := filepath.Join(outside, "signing_key")
	writeKey(t, good)
	inSource := filepath.Join(src, "sub", "signing_key")
	writeKey(t, inSource)
	inMount := filepath.Join(mnt, "signing_key")
	writeKey(t, inMount)
	linked := filepath.Join(outside, "linked")
	writeKey(t, linked)
	if err := os.Link(linked, filepath.Join(outside, "another-name")); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Source: src, Mountpoint: mnt, OwnerUID: os.Getuid()}
	cases := []struct{ name, key, want string }{
		{"outside the workspace", good, ""},
		{"inside the source", inSource, "which the mount serves"},
		{"inside the mountpoint", inMount, "which the mount serves"},
		{"with two links", linked, "2 links"},
		{"relative, inside the source", mustRel(t, inSource), "which the mount serves"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg.SigningKeys = []string{tc.key}
			s, err := loadSigningKeys(cfg)
			switch {
			case tc.want == "" && (err != nil || s == nil):
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	cfg.SigningKeys = nil
	if s, err := loadSigningKeys(cfg); s != nil || err != nil {
		t.Fatalf("no key: %v, %v", s, err)
	}
}

func mustRel(t *testing.T, p string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, p)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// TestCheckpointsSignTheChain: a checkpoint is written when records came
// since the last one, never for none; it is due after checkpointRecords
// records or checkpointInterval; and an allowed signer's trust covers
// every record before it.
func TestCheckpointsSignTheChain(t *testing.T) {
	d := openDaemon(t, testPolicy)
	key := filepath.Join(t.TempDir(), "signing_key")
	pub := writeKey(t, key)
	var err error
	if d.signing, err = loadSigningKeys(Config{Source: d.cfg.Source, Mountpoint: d.cfg.Mountpoint, OwnerUID: os.Getuid(), SigningKeys: []string{key}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	d.gov.Record(ledger.Change{Event: ledger.EventWrite, Path: "src/a.go", Intent: "INT-001", PostHash: ledger.HashBytes([]byte("a"))})
	if err := d.FlushLedger(); err != nil {
		t.Fatal(err)
	}
	if d.checkpointDue(now) {
		t.Fatal("a checkpoint is due at once after one record")
	}
	if !d.checkpointDue(now.Add(checkpointInterval)) {
		t.Fatal("no checkpoint due after the interval")
	}
	d.checkpoint("test")
	d.checkpoint("test") // nothing new: no second checkpoint
	if d.checkpointDue(now.Add(2 * checkpointInterval)) {
		t.Fatal("a checkpoint is due with no record since the last")
	}
	for range checkpointRecords {
		d.gov.Record(ledger.Change{Event: ledger.EventDenied, Path: "x", Validation: "FAIL", Code: "SCOPE_VIOLATION"})
	}
	if err := d.FlushLedger(); err != nil {
		t.Fatal(err)
	}
	if !d.checkpointDue(time.Now()) {
		t.Fatalf("no checkpoint due after %d records", checkpointRecords)
	}
	d.checkpoint("test")
	if st := d.signingStatus(); !st.Signed || st.Checkpoints != 2 || st.LastCheckpoint == nil || st.Keys[0] != sshsig.Fingerprint(pub) {
		t.Fatalf("status: %+v", st)
	}

	data, err := os.ReadFile(d.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	var links []ledgersign.Link
	checkpoints := 0
	for _, raw := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r ledger.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if r.Gov().Event == ledger.EventCheckpoint {
			checkpoints++
		}
		links = append(links, ledgersign.Link{Hash: ledger.LineHash(raw), Record: &r})
	}
	if checkpoints != 2 || links[len(links)-1].Record.Gov().Event != ledger.EventCheckpoint {
		t.Fatalf("%d checkpoints, the last line %s", checkpoints, links[len(links)-1].Record.Gov().Event)
	}
	signers, err := sshsig.ParseAllowedSigners("signers", []byte("human@example.com "+string(ssh.MarshalAuthorizedKey(pub))))
	if err != nil {
		t.Fatal(err)
	}
	cov := (&ledgersign.Trust{File: "signers", Signers: signers}).Cover(links)
	if cov.Signed() != len(links) || cov.Valid != 2 {
		t.Fatalf("signed %d of %d, %d valid checkpoints: %v", cov.Signed(), len(links), cov.Valid, cov.Invalid)
	}
}
