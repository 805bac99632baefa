// Package gittest builds real git repositories in temporary directories
// for tests, with git run as plain git (no intentfs hardening), the way a
// person or an agent would.
package gittest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Policy is the policy of the git tests: INT-001 owns src/**, INT-002
// docs/**, both in progress.
const Policy = `active_intents:
  - id: INT-001
    name: source work
    status: IN_PROGRESS
    owned_scope: ["src/**"]
  - id: INT-002
    name: docs work
    status: IN_PROGRESS
    owned_scope: ["docs/**"]
`

// Env is the environment git runs with in tests: no system or global
// config, a fixed identity and dates that do not matter.
func Env() []string {
	return append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@example.com",
		"GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@example.com")
}

// Git runs git in dir and returns its trimmed stdout; it fails the test
// on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// GitErr runs git in dir and returns its trimmed combined output.
func GitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = Env()
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Init makes dir a repository with branch main.
func Init(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q", "-b", "main")
}

// Write writes files (path → content) below dir.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Commit writes files, stages everything and commits; it returns the new
// commit id.
func Commit(t testing.TB, dir, msg string, files map[string]string) string {
	t.Helper()
	Write(t, dir, files)
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", msg)
	return Git(t, dir, "rev-parse", "HEAD")
}

// Sha is the ledger's content hash of s.
func Sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// Sh runs a shell script in dir with the test environment and returns its
// trimmed combined output.
func Sh(dir, script string) (string, error) {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = Env()
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
