package fence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
)

// cachedPolicy gives the agent src/** under INT-001 and docs/** under
// INT-005, so a select can take src/ out of its scope.
const cachedPolicy = `active_intents:
  - id: INT-001
    name: src work
    status: IN_PROGRESS
    owned_scope: ["src/**"]
  - id: INT-005
    name: docs work
    status: IN_PROGRESS
    owned_scope: ["docs/**"]
`

// mountCached mounts seed on the cached data path, the tree owned by the
// agent (so only intentfs stands in its way) and reachable by it.
func mountCached(t *testing.T, intent string, seed map[string]string) *testenv.Env {
	t.Helper()
	t.Setenv("INTENTFS_DATA_PATH", "cached")
	e := testenv.MountPrepared(t, cachedPolicy, intent, seed, func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	if got := e.D.Status().DataPath; got != "cached" {
		t.Fatalf("status data path %q, want cached", got)
	}
	return e
}

// cachedAgent runs script as the agent's uid and fails the test if it fails.
func cachedAgent(e *testenv.Env, script string) string {
	e.T.Helper()
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, script)
	if err != nil {
		e.T.Fatalf("as the agent, %s: %v\n%s", script, err, out)
	}
	return out
}

// agentDenied fails the test unless script, run as the agent, fails with
// EACCES.
func agentDenied(e *testenv.Env, script string) {
	e.T.Helper()
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, script)
	if err == nil || !strings.Contains(out, "Permission denied") {
		e.T.Fatalf("as the agent, %s: want Permission denied, got err=%v\n%s", script, err, out)
	}
}

// TestCachedPathRefusesAtTheChangingRequest: with no OPEN, an append
// out of scope fails in write(2) and an O_TRUNC open at its SETATTR; the
// file is untouched and the refusal is readable, as on the passthrough
// path.
func TestCachedPathRefusesAtTheChangingRequest(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"README.md": "readme\n", "src/a.txt": "one\n"})
	// An open for writing is no longer decided: the write is.
	agentDenied(e, "/bin/echo x >> README.md")
	agentDenied(e, ": > README.md")
	agentDenied(e, "printf y | dd of=README.md conv=notrunc status=none")
	if got, _ := e.SrcContent("README.md"); got != "readme\n" {
		t.Fatalf("README.md is %q after refused changes", got)
	}
	if out := cachedAgent(e, "cat .intentfs/denials"); !strings.Contains(out, "README.md") {
		t.Fatalf(".intentfs/denials does not name README.md:\n%s", out)
	}
	// Reading is not a change: it is never refused.
	if out := cachedAgent(e, "cat README.md"); out != "readme\n" {
		t.Fatalf("reading README.md: %q", out)
	}
}

// TestCachedPathRecordsWithPreImages: an append, an overwrite in place, a
// truncate and a sparse write of existing files, each recorded with the
// hashes of the content before and after, the content before kept for
// undo.
func TestCachedPathRecordsWithPreImages(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/a.txt": "one\n", "src/b.txt": "bee\n", "src/t.txt": "long content\n", "src/s.bin": "S"})
	store := objects.New(e.Src)
	kept := func(r *ledger.Record, want string) {
		t.Helper()
		if r.Gov().PreImage != "stored" {
			t.Fatalf("%s: pre-image %q, want stored", r.Path(), r.Gov().PreImage)
		}
		p, _ := store.Path(ledger.Str(r.Gov().PreHash))
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Fatalf("%s: kept pre-image %q (%v), want %q", r.Path(), b, err, want)
		}
	}

	cachedAgent(e, "echo more >> src/a.txt")
	r := e.WaitRecord("append", testenv.Event(ledger.EventWrite, "src/a.txt"))
	if ledger.Str(r.Gov().PreHash) != testenv.ShaOf([]byte("one\n")) || ledger.Str(r.Gov().PostHash) != testenv.ShaOf([]byte("one\nmore\n")) {
		t.Fatalf("append recorded %s -> %s", ledger.Str(r.Gov().PreHash), ledger.Str(r.Gov().PostHash))
	}
	kept(r, "one\n")

	// A file made through the mount: its creation is recorded with what
	// its creator wrote (the kernel sends no RELEASE on this path).
	cachedAgent(e, "echo new > src/new.txt")
	r = e.WaitRecord("creation", testenv.Event(ledger.EventCreate, "src/new.txt"))
	if ledger.Str(r.Gov().PostHash) != testenv.ShaOf([]byte("new\n")) {
		t.Fatalf("creation recorded post %s", ledger.Str(r.Gov().PostHash))
	}

	cachedAgent(e, "printf B | dd of=src/b.txt conv=notrunc status=none")
	r = e.WaitRecord("overwrite", testenv.Event(ledger.EventWrite, "src/b.txt"))
	if ledger.Str(r.Gov().PostHash) != testenv.ShaOf([]byte("Bee\n")) {
		t.Fatalf("overwrite recorded post %s", ledger.Str(r.Gov().PostHash))
	}
	kept(r, "bee\n")

	// An O_TRUNC open arrives as a SETATTR; it and the writes after it
	// are one change, as on the passthrough path: here none follow.
	cachedAgent(e, ": > src/t.txt")
	r = e.WaitRecord("truncate", testenv.Event(ledger.EventWrite, "src/t.txt"))
	if ledger.Str(r.Gov().PostHash) != ledger.EmptyHash {
		t.Fatalf("the emptying open recorded post %s", ledger.Str(r.Gov().PostHash))
	}
	kept(r, "long content\n")

	// A write far past the end leaves a hole; the mount and the source
	// agree on every byte.
	cachedAgent(e, "printf Z | dd of=src/s.bin bs=1 seek=1048576 conv=notrunc status=none")
	r = e.WaitRecord("sparse write", testenv.Event(ledger.EventWrite, "src/s.bin"))
	kept(r, "S")
	mnt, err := os.ReadFile(filepath.Join(e.Mnt, "src/s.bin"))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile(filepath.Join(e.Src, "src/s.bin"))
	if len(mnt) != 1048577 || string(mnt) != string(src) || mnt[1048576] != 'Z' {
		t.Fatalf("sparse file through the mount: %d bytes, equal to the source: %v", len(mnt), string(mnt) == string(src))
	}
	if ledger.Str(r.Gov().PostHash) != e.Sha("src/s.bin") {
		t.Fatalf("sparse write recorded post %s, source is %s", ledger.Str(r.Gov().PostHash), e.Sha("src/s.bin"))
	}
}

// TestCachedPathReadsFollowTheSource: the page cache a cached mount keeps
// is dropped when the file changes behind the mount, in place or
// replaced.
func TestCachedPathReadsFollowTheSource(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/g.txt": "alpha\n"})
	if out := cachedAgent(e, "grep -rn alpha src"); !strings.Contains(out, "src/g.txt:1:alpha") {
		t.Fatalf("grep: %q", out)
	}
	testenv.WriteFile(t, filepath.Join(e.Src, "src/g.txt"), "beta\n")
	testenv.WaitFor(t, func() bool {
		out, _ := e.ShAs(testenv.AgentUID, testenv.AgentGID, "grep -rn beta src")
		return strings.Contains(out, "src/g.txt:1:beta")
	}, "grep through the mount sees the source's change in place")
	tmp := filepath.Join(e.Src, "src/g.txt.new")
	testenv.WriteFile(t, tmp, "gamma\n")
	if err := os.Rename(tmp, filepath.Join(e.Src, "src/g.txt")); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, func() bool {
		out, _ := e.ShAs(testenv.AgentUID, testenv.AgentGID, "cat src/g.txt")
		return out == "gamma\n"
	}, "reading through the mount sees the file replaced in the source")
}

// TestCachedPathHardLink: a write through a second name of the file is
// decided and recorded as any other; a name outside the scope is not
// made.
func TestCachedPathHardLink(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/a.txt": "one\n"})
	agentDenied(e, "ln src/a.txt outside.txt")
	cachedAgent(e, "ln src/a.txt src/b.txt && echo two >> src/b.txt")
	testenv.WaitFor(t, func() bool {
		for _, r := range e.Records() {
			if r.Gov().Event == ledger.EventWrite && (r.Path() == "src/a.txt" || r.Path() == "src/b.txt") &&
				ledger.Str(r.Gov().PostHash) == testenv.ShaOf([]byte("one\ntwo\n")) {
				return true
			}
		}
		return false
	}, "the write through the link recorded")
	if out := cachedAgent(e, "cat src/a.txt"); out != "one\ntwo\n" {
		t.Fatalf("src/a.txt through the mount: %q", out)
	}
}

// TestCachedPathWritesAfterSelectAreDecidedAnew: a descriptor kept open
// across a select writes under the intent selected since; what it wrote
// before is recorded under the intent it was written under, before the
// select.
func TestCachedPathWritesAfterSelectAreDecidedAnew(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/a.txt": "one\n"})
	out, _ := e.ShAs(testenv.AgentUID, testenv.AgentGID, `exec 3>>src/a.txt
echo two >&3 || exit 10
echo INT-005 > .intentfs/active || exit 11
if echo three >&3; then exit 12; fi
exit 0`)
	if strings.Contains(out, "exit") {
		t.Fatal(out)
	}
	if got, _ := e.SrcContent("src/a.txt"); got != "one\ntwo\n" {
		t.Fatalf("src/a.txt is %q, want the write before the select only", got)
	}
	recs := e.Records()
	write, sel := -1, -1
	for i, r := range recs {
		switch {
		case r.Gov().Event == ledger.EventWrite && r.Path() == "src/a.txt":
			write = i
			if ledger.Str(r.Gov().IntentID) != "INT-001" {
				t.Errorf("the write is recorded under %q, want INT-001", ledger.Str(r.Gov().IntentID))
			}
		case r.Gov().Event == ledger.EventSelect && ledger.Str(r.Gov().IntentID) == "INT-005":
			sel = i
		}
	}
	if write < 0 || sel < 0 || write > sel {
		t.Fatalf("write record at %d, select at %d: want the write recorded first", write, sel)
	}
}

// TestCachedPathSharedMappingOfExistingFileIsRefused: the writeback of a
// shared writable mapping carries no caller, so whose change it is cannot
// be decided: it is refused, and the source keeps its content.
func TestCachedPathSharedMappingOfExistingFileIsRefused(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/m.bin": "mmmm"})
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `python3 -c '
import mmap, os, sys
fd = os.open("src/m.bin", os.O_RDWR)
m = mmap.mmap(fd, 4, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[0:1] = b"X"
try:
    m.flush()
except OSError as e:
    print("flush refused:", e.errno, e.strerror)
    sys.exit(0)
print("flushed")
'`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("msync: %s", strings.TrimSpace(out))
	if !strings.Contains(out, "flush refused") {
		t.Fatalf("the mapping's writeback was not refused:\n%s", out)
	}
	if got, _ := e.SrcContent("src/m.bin"); got != "mmmm" {
		t.Fatalf("src/m.bin is %q in the source", got)
	}
}
