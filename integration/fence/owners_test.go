package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// ownerOf returns "uid:gid mode" of a path in the source, not following a
// symlink.
func ownerOf(t *testing.T, path string) string {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Sys().(*syscall.Stat_t)
	return fmt.Sprintf("%d:%d %04o", s.Uid, s.Gid, s.Mode&0o7777)
}

// TestDaemonWritesKeepOwners: in a checkout owned by 1000:1000 and served
// by a root daemon, what the daemon and the CLI write into the source
// (a revert's restored, recreated and re-made files and directories, the
// policy's write-back, the intent map) keeps the owner, group and mode of
// the file it replaces, or takes the owner and group of its directory:
// root must not lock the checkout's owner out of their own files.
func TestDaemonWritesKeepOwners(t *testing.T) {
	testenv.Serial(t)
	e := testenv.MountForSessions(t, "INT-005")
	if err := os.Chmod(filepath.Join(e.Src, "src/a.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(e.Src, "docs/index.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{"src/a.txt": ownerOf(t, filepath.Join(e.Src, "src/a.txt")), "docs/index.md": ownerOf(t, filepath.Join(e.Src, "docs/index.md"))}
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `echo agent >> src/a.txt && rm docs/index.md && rmdir docs && mkdir -p notes/sub && echo n > notes/sub/new.txt`); err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	e.WaitRecord("the rmdir", testenv.Event(ledger.EventRmdir, "docs"))
	e.WaitRecord("the create", testenv.Event(ledger.EventCreate, "notes/sub/new.txt"))
	if out, err := e.CLI("revert", "--mount", e.Mnt, "--intent", "INT-005"); err != nil {
		t.Fatalf("revert: %v\n%s", err, out)
	}
	for p, want := range before {
		if got := ownerOf(t, filepath.Join(e.Src, p)); got != want {
			t.Errorf("%s after revert: %s, want %s (as before)", p, got, want)
		}
	}
	if got := ownerOf(t, filepath.Join(e.Src, "docs")); !strings.HasPrefix(got, "1000:1000 ") {
		t.Errorf("the re-made directory docs: %s, want 1000:1000", got)
	}

	// The policy's write-back, through the daemon.
	pol := filepath.Join(e.Src, policy.IntentsFile)
	want := ownerOf(t, pol)
	if out, err := e.CLI("intent", "scope", "INT-001", "--add", "extra/**", "--source", e.Src); err != nil {
		t.Fatalf("intent scope: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(pol); !strings.Contains(string(b), "extra/**") {
		t.Fatal("the scope was not written back")
	}
	if got := ownerOf(t, pol); got != want {
		t.Errorf("the policy after its write-back: %s, want %s", got, want)
	}

	// The intent map, written by the daemon as changes are recorded.
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `echo mapped > src/mapped.txt`); err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	imap := filepath.Join(e.Src, ".orchestration", "intent_map.md")
	testenv.WaitFor(t, func() bool { b, _ := os.ReadFile(imap); return strings.Contains(string(b), "src/mapped.txt") }, "the intent map")
	if got := ownerOf(t, imap); !strings.HasPrefix(got, "1000:1000 ") {
		t.Errorf("the intent map: %s, want 1000:1000", got)
	}
	// The lock of the policy's write-back too: the owner takes it to edit
	// the policy once the mount has ended.
	if got := ownerOf(t, filepath.Join(e.Src, ".orchestration", ".active_intents.yaml.lock")); !strings.HasPrefix(got, "1000:1000 ") {
		t.Errorf("the policy's lock file: %s, want 1000:1000", got)
	}
}
