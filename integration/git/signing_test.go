package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/intentfs/intentfs/internal/ledgersign"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// sshKeygen makes an ed25519 key pair at path, as uid (0: root), with
// the real ssh-keygen, and returns its allowed-signers key text.
func sshKeygen(t *testing.T, path string, uid int) string {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	args := []string{"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", path}
	if uid != 0 {
		args = append([]string{"setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"}, args...)
	}
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(pub))
}

// noteRecords returns the records of the notes of every commit of repo.
func noteRecords(t *testing.T, repo string) []json.RawMessage {
	t.Helper()
	list := testenv.GitAs(t, repo, "git notes --ref=refs/notes/intentfs list | cut -d' ' -f2")
	var out []json.RawMessage
	for _, c := range strings.Fields(list) {
		sc := bufio.NewScanner(strings.NewReader(testenv.GitAs(t, repo, "git notes --ref=refs/notes/intentfs show "+c)))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
				out = append(out, append(json.RawMessage(nil), l...))
			}
		}
	}
	return out
}

// TestSignedRecordsCountOnlyFromAllowedSigners: a mount signs its chain
// with the human's key (and, rotating, a new one). On a fresh clone with
// an allowed-signers file its records count, and ssh-keygen -Y verify
// accepts its checkpoint. The agent then forges a whole chain of a new
// origin in the notes, with a checkpoint signed by its own key, for a
// README it could never write in the mount: with the signers file it
// does not count (and check names the unsigned chain); without one it
// counts, and check says that signatures were not checked.
func TestSignedRecordsCountOnlyFromAllowedSigners(t *testing.T) {
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	c := testenv.NewCLI(t)
	root := t.TempDir()
	os.Chmod(filepath.Dir(root), 0o755)
	os.Chmod(root, 0o755)
	origin, seed := filepath.Join(root, "origin.git"), filepath.Join(root, "seed")
	for _, d := range []string{origin, seed} {
		os.Mkdir(d, 0o755)
	}
	testenv.ChownTree(t, root)
	testenv.GitAs(t, origin, "git init -q --bare -b main .")
	testenv.GitAs(t, seed, "git init -q -b main . && mkdir -p .orchestration")
	testenv.WriteFile(t, filepath.Join(seed, policy.IntentsFile), testenv.NotesPolicy)
	testenv.WriteFile(t, filepath.Join(seed, "README.md"), "# project\n")
	scratch := t.TempDir()
	c.Must("init", scratch) // intentfs init writes .orchestration/.gitignore
	gi, err := os.ReadFile(filepath.Join(scratch, ".orchestration", ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(seed, ".orchestration", ".gitignore"), string(gi))
	// The human's keys, root's, outside the workspace; the old one and
	// the new one of a rotation.
	keys := t.TempDir()
	oldPub := sshKeygen(t, filepath.Join(keys, "signing_key"), 0)
	newPub := sshKeygen(t, filepath.Join(keys, "signing_key.new"), 0)
	// The agent's own key: it can make one.
	agentDir := filepath.Join(root, "agentkeys")
	os.Mkdir(agentDir, 0o700)
	os.Chown(agentDir, 1000, 1000)
	agentPub := sshKeygen(t, filepath.Join(agentDir, "id_ed25519"), 1000)
	signers := filepath.Join(keys, "allowed_signers")
	testenv.WriteFile(t, signers, "human@example.com "+oldPub+"\n")
	newOnly := filepath.Join(keys, "allowed_signers.new")
	testenv.WriteFile(t, newOnly, "human@example.com "+newPub+"\n")
	agentSigners := filepath.Join(keys, "allowed_signers.agent")
	testenv.WriteFile(t, agentSigners, "human@example.com "+oldPub+"\nstranger@example.com namespaces=\"git\" "+agentPub+"\n")

	// The team's signers file, on the base branch, for CI.
	testenv.WriteFile(t, filepath.Join(seed, ".github", "allowed_signers"), "human@example.com "+oldPub+"\n")
	testenv.ChownTree(t, seed)
	testenv.GitAs(t, seed, "git add -A && git commit -qm base && git push -q "+origin+" main")
	base := testenv.GitAs(t, seed, "git rev-parse HEAD")

	a := filepath.Join(root, "a")
	testenv.GitAs(t, root, "git clone -q "+origin+" a")
	mnt := t.TempDir()
	// Keys the daemon must refuse: readable by others, inside the source.
	loose := filepath.Join(keys, "loose")
	data, _ := os.ReadFile(filepath.Join(keys, "signing_key"))
	testenv.WriteFile(t, loose, string(data))
	os.Chmod(loose, 0o644)
	if out, code := c.Run("mount", "--signing-key", loose, a, mnt); code == 0 || !strings.Contains(out, "chmod 600") {
		t.Fatalf("a key others can read was taken (exit %d):\n%s", code, out)
	}
	inside := filepath.Join(a, "signing_key")
	testenv.WriteFile(t, inside, string(data))
	os.Chmod(inside, 0o600)
	if out, code := c.Run("mount", "--signing-key", inside, a, mnt); code == 0 || !strings.Contains(out, "which the mount serves") {
		t.Fatalf("a key inside the source was taken (exit %d):\n%s", code, out)
	}
	os.Remove(inside)

	// Unsigned, status says so.
	c.MountCLI(a, mnt, "--intent", "INT-001")
	if out := c.Must("status", "--mount", mnt); !strings.Contains(out, "records are UNSIGNED") {
		t.Fatalf("status of a mount without a key:\n%s", out)
	}
	c.Must("unmount", mnt)
	c.MountCLI(a, mnt, "--intent", "INT-001", "--signing-key", filepath.Join(keys, "signing_key"), "--signing-key", filepath.Join(keys, "signing_key.new"))
	testenv.GitAs(t, mnt, "mkdir -p src && printf 'package api\\n' > src/api.go && git add src/api.go && git commit -qm 'the api'")
	// The mount's sync after the commit carries a checkpoint to HEAD.
	noted := func() string {
		cmd := testenv.CommandIn(a, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "git", "notes", "--ref=refs/notes/intentfs", "show", "HEAD")
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	for deadline := time.Now().Add(testenv.WaitTimeout); !strings.Contains(noted(), `"event":"checkpoint"`); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			l, _ := os.ReadFile(filepath.Join(a, ledger.FileName))
			t.Fatalf("no signed checkpoint in HEAD's note after %v\nledger:\n%s\nnote:\n%s", testenv.WaitTimeout, l, noted())
		}
	}
	out := c.Must("status", "--mount", mnt)
	if !strings.Contains(out, "checkpoints signed by SHA256:") {
		t.Fatalf("status of a signing mount:\n%s", out)
	}
	var st struct {
		Signing struct {
			Signed      bool
			Keys        []string
			Checkpoints int
		}
	}
	if err := json.Unmarshal([]byte(c.Must("status", "--mount", mnt, "--json")), &st); err != nil || !st.Signing.Signed || len(st.Signing.Keys) != 2 || st.Signing.Checkpoints == 0 {
		t.Fatalf("status --json signing: %+v %v", st.Signing, err)
	}
	c.Must("unmount", mnt)
	c.Must("notes", "push", "--source", a)
	testenv.GitAs(t, a, "git push -q origin main")

	// CI's fresh clone.
	fresh := filepath.Join(root, "fresh")
	testenv.GitAs(t, root, "git clone -q "+origin+" fresh")
	c.Must("notes", "fetch", "--source", fresh)
	out = c.Must("check", "--source", fresh, "--allowed-signers", signers, base+"..HEAD")
	t.Logf("check of the mount's signed work, signers configured:\n%s", out)
	if !strings.HasPrefix(out, "OK") || !strings.Contains(out, "signed by human@example.com") {
		t.Fatalf("the mount's signed chain does not count:\n%s", out)
	}
	// Rotation: the checkpoints the old key signed, the new key signed too.
	if out := c.Must("check", "--source", fresh, "--allowed-signers", newOnly, base+"..HEAD"); !strings.HasPrefix(out, "OK") {
		t.Fatalf("with only the new key trusted:\n%s", out)
	}
	if out := c.Must("verify", "--notes", "--source", fresh, "--allowed-signers", signers); !strings.HasPrefix(out, "origin") || !strings.Contains(lastLine(out), "intact") {
		t.Fatalf("verify --notes with signers:\n%s", out)
	}

	// ssh-keygen -Y verify accepts a checkpoint the daemon made.
	var cp *ledger.Record
	var chain string
	for _, raw := range noteRecords(t, fresh) {
		var r ledger.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if r.Gov().Event == ledger.EventHeader {
			chain = r.Gov().Chain
		}
		if r.Gov().Event == ledger.EventCheckpoint && cp == nil {
			cp = &r
		}
	}
	if cp == nil || cp.Gov().Checkpoint.Chain != chain || len(cp.Gov().Checkpoint.Signatures) != 2 {
		t.Fatalf("no checkpoint of chain %s with two signatures in the notes: %+v", chain, cp)
	}
	g := cp.Gov()
	msg := ledger.CheckpointMessage(g.Checkpoint, cp.Timestamp)
	sigFile := filepath.Join(t.TempDir(), "checkpoint.sig")
	testenv.WriteFile(t, sigFile, g.Checkpoint.Signatures[0].Signature)
	v := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", "human@example.com", "-n", ledger.CheckpointNamespace, "-s", sigFile)
	v.Stdin = bytes.NewReader(msg)
	if vout, err := v.CombinedOutput(); err != nil || !strings.Contains(string(vout), "Good") {
		t.Fatalf("ssh-keygen -Y verify of the daemon's checkpoint: %v\n%s", err, vout)
	}

	// The agent's attack, in a clone of its own: README.md by plumbing,
	// and a whole chain of a new origin, with a checkpoint signed by its
	// own key, in the notes.
	evil := filepath.Join(root, "evil")
	testenv.GitAs(t, root, "git clone -q "+origin+" evil && cd evil && git fetch -q origin refs/notes/intentfs:refs/notes/intentfs")
	forged := filepath.Join(agentDir, "forged.jsonl")
	pem, err := os.ReadFile(filepath.Join(agentDir, "id_ed25519"))
	if err != nil {
		t.Fatal(err)
	}
	agentKey, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ledger.OpenWriter(forged, ledger.WriterOptions{Source: "/home/agent/repo", Version: "0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	// docs/guide.md, under INT-002, whose scope covers it: the record is
	// all the check asks for.
	w.Append(ledger.NewRecord(ledger.Change{Event: ledger.EventCreate, Path: "docs/guide.md", Intent: "INT-002", Validation: "PASS",
		PostHash: ledger.HashBytes([]byte("evil\n")), Lines: 1}, "0.1.0"))
	w.Append(ledger.NewCheckpoint("0.1.0", ledgersign.NewSigner(rand.Reader, agentKey).Sign))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	os.Chown(forged, 1000, 1000)
	testenv.GitAs(t, evil, "git checkout -q -b pr1 && blob=$(echo evil | git hash-object -w --stdin) && git update-index --add --cacheinfo 100644,$blob,docs/guide.md && git commit -qm 'the guide' && "+
		"git notes --ref=refs/notes/intentfs add -F "+forged+" HEAD && git push -q origin pr1 refs/notes/intentfs")
	pr := filepath.Join(root, "pr")
	testenv.GitAs(t, root, "git clone -q "+origin+" pr && cd pr && git checkout -q pr1")
	c.Must("notes", "fetch", "--source", pr)
	out, code := c.Run("check", "--source", pr, "--allowed-signers", signers, "origin/main..HEAD")
	t.Logf("check of the forged chain, signers configured (exit %d):\n%s", code, out)
	if code != 1 || !testenv.LineWith(out, "docs/guide.md", "written by an unsigned chain (origin ", "not counted") {
		t.Fatalf("the forged chain counted with signers configured (exit %d):\n%s", code, out)
	}
	// A signers file that names the agent's key for another namespace
	// only: its checkpoint still does not count.
	if out, code := c.Run("check", "--source", pr, "--allowed-signers", agentSigners, "origin/main..HEAD"); code != 1 || !strings.Contains(out, "not counted") {
		t.Fatalf("the agent's checkpoint counted (exit %d):\n%s", code, out)
	}
	if out, code := c.Run("verify", "--notes", "--source", pr, "--allowed-signers", signers); code != 1 || !strings.Contains(out, "not covered by a checkpoint") {
		t.Fatalf("verify --notes of the forged chain with signers (exit %d):\n%s", code, out)
	}
	// The CI recipe, with the signers file of the base branch.
	out, code = runCIScriptWith(t, c, pr, "main", "INTENTFS_ALLOWED_SIGNERS=.github/allowed_signers")
	if code != 1 || !testenv.LineWith(out, "docs/guide.md", "written by an unsigned chain") {
		t.Fatalf("the CI script with the base's signers let the forged chain count (exit %d):\n%s", code, out)
	}
	out, code = c.Run("check", "--source", pr, "origin/main..HEAD")
	t.Logf("check of the forged chain, no signers (exit %d):\n%s", code, out)
	if code != 0 || !strings.HasPrefix(out, "OK") || !strings.Contains(out, "signatures were not checked") {
		t.Fatalf("check without signers does not say signatures were not checked (exit %d):\n%s", code, out)
	}
}

// runCIScriptWith is runCIScript with more environment.
func runCIScriptWith(t *testing.T, c *testenv.CLI, dir, baseBranch string, env ...string) (string, int) {
	t.Helper()
	script, err := testenv.ModuleFile("docs", "ci", "intentfs-check.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(c.Bin), 0o755); err != nil {
		t.Fatal(err)
	}
	runtime := t.TempDir()
	os.Chmod(runtime, 0o777)
	cmd := exec.Command("setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sh", script, baseBranch)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"INTENTFS=" + c.Bin, "INTENTFS_RUNTIME_DIR=" + runtime}, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", script, err)
	}
	return string(out), code
}

// TestSessionCannotReadTheSigningKey: an agent session of a signing
// mount cannot read the key (root's, 0600, outside the workspace), and
// a session that could (as root) is refused.
func TestSessionCannotReadTheSigningKey(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	testenv.RequireFUSE(t)
	c := testenv.NewCLI(t)
	src := testenv.SourceOutsideTmp(t)
	testenv.WriteFile(t, filepath.Join(src, policy.IntentsFile), testenv.SessionPolicy)
	testenv.WriteFile(t, filepath.Join(src, "README.md"), "readme\n")
	testenv.ChownTree(t, src)
	keys, err := os.MkdirTemp("/var/lib", "intentfs-keys-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(keys) })
	os.Chmod(keys, 0o755)
	key := filepath.Join(keys, "signing_key")
	sshKeygen(t, key, 0)
	mnt := t.TempDir()
	os.Chmod(mnt, 0o755)
	c.MountCLI(src, mnt, "--intent", "INT-005", "--signing-key", key)
	run := func(user string, argv ...string) (string, int) {
		cmd := exec.Command(c.Bin, append([]string{"run", "--mount", mnt, "--user", user, "--"}, argv...)...)
		cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+c.Runtime)
		cmd.Dir = "/"
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	if out, code := run("1000", "cat", key); code == 0 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("the agent read the signing key (exit %d):\n%s", code, out)
	}
	if out, code := run("1000", "sh", "-c", "cat README.md"); code != 0 || !strings.Contains(out, "readme") {
		t.Fatalf("the session does not work (exit %d):\n%s", code, out)
	}
	if out, code := run("root", "true"); code == 0 || !strings.Contains(out, "a session as root could read") {
		t.Fatalf("a root session of a signing mount was started (exit %d):\n%s", code, out)
	}
}
