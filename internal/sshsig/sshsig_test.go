package sshsig

import (
	"bytes"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

const testNamespace = "intentfs"

// keygen makes a key pair with ssh-keygen and returns its signer and the
// private key's path.
func keygen(t *testing.T, typ string, bits string) (ssh.Signer, string) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	path := filepath.Join(t.TempDir(), "id_"+typ)
	args := []string{"-q", "-t", typ, "-N", "", "-C", "test", "-f", path}
	if bits != "" {
		args = append(args, "-b", bits)
	}
	if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen %v: %v\n%s", args, err, out)
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

func allowedLine(principal string, pub ssh.PublicKey, options string) string {
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
	if options != "" {
		return principal + " " + options + " " + key + "\n"
	}
	return principal + " " + key + "\n"
}

// sshKeygenVerify runs ssh-keygen -Y verify, as git does for a commit
// signed with gpg.format=ssh.
func sshKeygenVerify(t *testing.T, allowed, principal string, sig, msg []byte) (string, error) {
	t.Helper()
	dir := t.TempDir()
	sigPath, allowedPath := filepath.Join(dir, "msg.sig"), filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(sigPath, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(allowedPath, []byte(allowed), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", allowedPath, "-I", principal, "-n", testNamespace, "-s", sigPath)
	cmd.Stdin = bytes.NewReader(msg)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestSignInteroperatesWithSSHKeygen: ssh-keygen -Y verify accepts what
// Sign makes, for each key type, and refuses it for another message or
// namespace; Verify accepts what ssh-keygen -Y sign makes.
func TestSignInteroperatesWithSSHKeygen(t *testing.T) {
	msg := []byte("checkpoint: chain head sha256:0123\n")
	for _, kt := range []struct{ typ, bits string }{{"ed25519", ""}, {"ecdsa", "256"}, {"ecdsa", "521"}, {"rsa", "2048"}} {
		t.Run(kt.typ+kt.bits, func(t *testing.T) {
			s, keyPath := keygen(t, kt.typ, kt.bits)
			allowed := allowedLine("daemon@example.com", s.PublicKey(), "")

			sig, err := Sign(rand.Reader, s, testNamespace, msg)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := sshKeygenVerify(t, allowed, "daemon@example.com", sig, msg); err != nil {
				t.Fatalf("ssh-keygen -Y verify refuses Sign's signature: %v\n%s\n%s", err, out, sig)
			}
			if out, err := sshKeygenVerify(t, allowed, "daemon@example.com", sig, append(msg, '!')); err == nil {
				t.Fatalf("ssh-keygen -Y verify accepts the signature for another message:\n%s", out)
			}
			if pub, err := Verify(sig, msg, testNamespace); err != nil || !bytes.Equal(pub.Marshal(), s.PublicKey().Marshal()) {
				t.Fatalf("Verify of Sign's signature: %v", err)
			}

			// ssh-keygen -Y sign, verified here.
			msgPath := filepath.Join(t.TempDir(), "msg")
			if err := os.WriteFile(msgPath, msg, 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("ssh-keygen", "-q", "-Y", "sign", "-f", keyPath, "-n", testNamespace, msgPath).CombinedOutput(); err != nil {
				t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
			}
			theirs, err := os.ReadFile(msgPath + ".sig")
			if err != nil {
				t.Fatal(err)
			}
			if pub, err := Verify(theirs, msg, testNamespace); err != nil || !bytes.Equal(pub.Marshal(), s.PublicKey().Marshal()) {
				t.Fatalf("Verify refuses ssh-keygen's signature: %v\n%s", err, theirs)
			}
			if _, err := Verify(theirs, append(msg, '!'), testNamespace); err == nil {
				t.Fatal("Verify accepts ssh-keygen's signature for another message")
			}
			if _, err := Verify(theirs, msg, "git"); err == nil {
				t.Fatal("Verify accepts a signature made for another namespace")
			}
		})
	}
}

func TestVerifyRefusesMalformed(t *testing.T) {
	s, _ := keygen(t, "ed25519", "")
	msg := []byte("m")
	sig, err := Sign(rand.Reader, s, testNamespace, msg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := unarmor(sig)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(raw)
		b[i] ^= 1
		return armor(b)
	}
	tests := []struct {
		name string
		sig  []byte
	}{
		{"empty", nil},
		{"no armor", []byte("hello")},
		{"no end line", []byte(armorBegin + "\nU1NIU0lH\n")},
		{"not base64", []byte(armorBegin + "\n!!!!\n" + armorEnd + "\n")},
		{"bad magic", flip(0)},
		{"version 2", flip(9)},
		{"truncated", armor(raw[:len(raw)-10])},
		{"a flipped signature byte", flip(len(raw) - 5)},
		{"oversized", append(bytes.Repeat([]byte("A"), maxArmored), sig...)},
	}
	for _, tt := range tests {
		if _, err := Verify(tt.sig, msg, testNamespace); err == nil {
			t.Errorf("%s: Verify accepted it", tt.name)
		}
	}
	if _, err := Sign(rand.Reader, s, "", msg); err == nil {
		t.Error("Sign without a namespace")
	}
}

func TestAllowedSigners(t *testing.T) {
	a, _ := keygen(t, "ed25519", "")
	b, _ := keygen(t, "ed25519", "")
	ka, kb := a.PublicKey(), b.PublicKey()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		file      string
		key       ssh.PublicKey
		namespace string
		want      string // principals, comma-joined; "" none
		wantErr   string
	}{
		{name: "listed key", file: allowedLine("alice@example.com", ka, ""), key: ka, namespace: "intentfs", want: "alice@example.com"},
		{name: "another key", file: allowedLine("alice@example.com", ka, ""), key: kb, namespace: "intentfs"},
		{name: "comments, blank lines, several principals", file: "# people\n\n" + allowedLine("alice@example.com,*@ops.example.com", ka, ""), key: ka, namespace: "intentfs", want: "alice@example.com,*@ops.example.com"},
		{name: "quoted principals", file: allowedLine(`"alice@example.com,bob@example.com"`, ka, ""), key: ka, namespace: "intentfs", want: "alice@example.com,bob@example.com"},
		{name: "namespaces allows", file: allowedLine("a", ka, `namespaces="git,intentfs"`), key: ka, namespace: "intentfs", want: "a"},
		{name: "namespaces git only", file: allowedLine("a", ka, `namespaces="git"`), key: ka, namespace: "intentfs"},
		{name: "namespaces pattern", file: allowedLine("a", ka, `namespaces="intent*"`), key: ka, namespace: "intentfs", want: "a"},
		{name: "namespaces negated", file: allowedLine("a", ka, `namespaces="*,!intentfs"`), key: ka, namespace: "intentfs"},
		{name: "option keyword case", file: allowedLine("a", ka, `NAMESPACES="intentfs"`), key: ka, namespace: "intentfs", want: "a"},
		{name: "valid now", file: allowedLine("a", ka, `valid-after="20260101",valid-before="20270101Z"`), key: ka, namespace: "intentfs", want: "a"},
		{name: "expired", file: allowedLine("a", ka, `valid-before="20261126115959Z"`), key: ka, namespace: "intentfs"},
		{name: "not yet valid", file: allowedLine("a", ka, `valid-after="202611261201Z"`), key: ka, namespace: "intentfs"},
		{name: "cert-authority allows no plain key", file: allowedLine("a", ka, "cert-authority"), key: ka, namespace: "intentfs"},
		{name: "two lines, the second matches", file: allowedLine("a", kb, "") + allowedLine("b", ka, ""), key: ka, namespace: "intentfs", want: "b"},
		{name: "a line without a key", file: "alice@example.com\n", wantErr: ":1: no key"},
		{name: "a bad key", file: "a ssh-ed25519 AAAA\n", wantErr: ":1: the key"},
		{name: "an unknown option", file: allowedLine("a", ka, "frobnicate"), wantErr: "unknown option"},
		{name: "a bad timestamp", file: allowedLine("a", ka, `valid-after="yesterday"`), wantErr: "timestamp"},
		{name: "unterminated quote", file: `"a ` + allowedLine("", ka, ""), wantErr: "unterminated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as, err := ParseAllowedSigners("allowed_signers", []byte(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "allowed_signers") {
					t.Fatalf("err %v, want one naming the file and %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(as.Allowed(tt.key, tt.namespace, now), ","); got != tt.want {
				t.Fatalf("Allowed = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLoadAllowedSignersRefusesASymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.WriteFile(real, []byte("# none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAllowedSigners(real); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAllowedSigners(link); err == nil {
		t.Fatal("a symlinked signers file was read")
	}
	if _, err := LoadAllowedSigners(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a missing file: %v", err)
	}
}

func TestMatchPatternList(t *testing.T) {
	tests := []struct {
		s, list string
		want    bool
	}{
		{"intentfs", "intentfs", true},
		{"intentfs", "git", false},
		{"intentfs", "git,intentfs", true},
		{"intentfs", "*", true},
		{"intentfs", "i?tentfs", true},
		{"intentfs", "*fs", true},
		{"intentfs", "*,!intent*", false},
		{"intentfs", "!git", false}, // a negation alone allows nothing
		{"a*b", "a*b", true},
		{"aXXb", "a*b*", true},
		{"", "*", true},
		{"x", "", false},
	}
	for _, tt := range tests {
		if got := matchPatternList(tt.s, tt.list); got != tt.want {
			t.Errorf("matchPatternList(%q, %q) = %v, want %v", tt.s, tt.list, got, tt.want)
		}
	}
}
