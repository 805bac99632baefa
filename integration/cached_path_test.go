package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
func mountCached(t *testing.T, intent string, seed map[string]string) *env {
	t.Helper()
	t.Setenv("INTENTFS_DATA_PATH", "cached")
	e := mountPrepared(t, cachedPolicy, intent, seed, func(src string) { chownTree(t, src) })
	e.reachableByAgent()
	if got := e.d.Status().DataPath; got != "cached" {
		t.Fatalf("status data path %q, want cached", got)
	}
	return e
}

// agent runs script as the agent's uid and fails the test if it fails.
func (e *env) agent(script string) string {
	e.t.Helper()
	out, err := e.shAs(agentUID, agentGID, script)
	if err != nil {
		e.t.Fatalf("as the agent, %s: %v\n%s", script, err, out)
	}
	return out
}

// agentDenied fails the test unless script, run as the agent, fails with
// EACCES.
func (e *env) agentDenied(script string) {
	e.t.Helper()
	out, err := e.shAs(agentUID, agentGID, script)
	if err == nil || !strings.Contains(out, "Permission denied") {
		e.t.Fatalf("as the agent, %s: want Permission denied, got err=%v\n%s", script, err, out)
	}
}

// TestCachedPathRefusesAtTheChangingRequest: with no OPEN, an append
// out of scope fails in write(2) and an O_TRUNC open at its SETATTR; the
// file is untouched and the refusal is readable, as on the passthrough
// path.
func TestCachedPathRefusesAtTheChangingRequest(t *testing.T) {
	e := mountCached(t, "INT-001", map[string]string{"README.md": "readme\n", "src/a.txt": "one\n"})
	// An open for writing is no longer decided: the write is.
	e.agentDenied("/bin/echo x >> README.md")
	e.agentDenied(": > README.md")
	e.agentDenied("printf y | dd of=README.md conv=notrunc status=none")
	if got, _ := e.srcContent("README.md"); got != "readme\n" {
		t.Fatalf("README.md is %q after refused changes", got)
	}
	if out := e.agent("cat .intentfs/denials"); !strings.Contains(out, "README.md") {
		t.Fatalf(".intentfs/denials does not name README.md:\n%s", out)
	}
	// Reading is not a change: it is never refused.
	if out := e.agent("cat README.md"); out != "readme\n" {
		t.Fatalf("reading README.md: %q", out)
	}
}

// TestCachedPathRecordsWithPreImages: an append, an overwrite in place, a
// truncate and a sparse write of existing files, each recorded with the
// hashes of the content before and after, the content before kept for
// undo.
func TestCachedPathRecordsWithPreImages(t *testing.T) {
	e := mountCached(t, "INT-001", map[string]string{"src/a.txt": "one\n", "src/b.txt": "bee\n", "src/t.txt": "long content\n", "src/s.bin": "S"})
	store := objects.New(e.src)
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

	e.agent("echo more >> src/a.txt")
	r := e.waitRecord("append", event(ledger.EventWrite, "src/a.txt"))
	if ledger.Str(r.Gov().PreHash) != shaOf([]byte("one\n")) || ledger.Str(r.Gov().PostHash) != shaOf([]byte("one\nmore\n")) {
		t.Fatalf("append recorded %s -> %s", ledger.Str(r.Gov().PreHash), ledger.Str(r.Gov().PostHash))
	}
	kept(r, "one\n")

	// A file made through the mount: its creation is recorded with what
	// its creator wrote (the kernel sends no RELEASE on this path).
	e.agent("echo new > src/new.txt")
	r = e.waitRecord("creation", event(ledger.EventCreate, "src/new.txt"))
	if ledger.Str(r.Gov().PostHash) != shaOf([]byte("new\n")) {
		t.Fatalf("creation recorded post %s", ledger.Str(r.Gov().PostHash))
	}

	e.agent("printf B | dd of=src/b.txt conv=notrunc status=none")
	r = e.waitRecord("overwrite", event(ledger.EventWrite, "src/b.txt"))
	if ledger.Str(r.Gov().PostHash) != shaOf([]byte("Bee\n")) {
		t.Fatalf("overwrite recorded post %s", ledger.Str(r.Gov().PostHash))
	}
	kept(r, "bee\n")

	e.agent(": > src/t.txt")
	r = e.waitRecord("truncate", event(ledger.EventTruncate, "src/t.txt"))
	kept(r, "long content\n")

	// A write far past the end leaves a hole; the mount and the source
	// agree on every byte.
	e.agent("printf Z | dd of=src/s.bin bs=1 seek=1048576 conv=notrunc status=none")
	r = e.waitRecord("sparse write", event(ledger.EventWrite, "src/s.bin"))
	kept(r, "S")
	mnt, err := os.ReadFile(filepath.Join(e.mnt, "src/s.bin"))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile(filepath.Join(e.src, "src/s.bin"))
	if len(mnt) != 1048577 || string(mnt) != string(src) || mnt[1048576] != 'Z' {
		t.Fatalf("sparse file through the mount: %d bytes, equal to the source: %v", len(mnt), string(mnt) == string(src))
	}
	if ledger.Str(r.Gov().PostHash) != e.sha("src/s.bin") {
		t.Fatalf("sparse write recorded post %s, source is %s", ledger.Str(r.Gov().PostHash), e.sha("src/s.bin"))
	}
}

// TestCachedPathReadsFollowTheSource: the page cache a cached mount keeps
// is dropped when the file changes behind the mount, in place or
// replaced.
func TestCachedPathReadsFollowTheSource(t *testing.T) {
	e := mountCached(t, "INT-001", map[string]string{"src/g.txt": "alpha\n"})
	if out := e.agent("grep -rn alpha src"); !strings.Contains(out, "src/g.txt:1:alpha") {
		t.Fatalf("grep: %q", out)
	}
	writeFile(t, filepath.Join(e.src, "src/g.txt"), "beta\n")
	waitFor(t, func() bool {
		out, _ := e.shAs(agentUID, agentGID, "grep -rn beta src")
		return strings.Contains(out, "src/g.txt:1:beta")
	}, "grep through the mount sees the source's change in place")
	tmp := filepath.Join(e.src, "src/g.txt.new")
	writeFile(t, tmp, "gamma\n")
	if err := os.Rename(tmp, filepath.Join(e.src, "src/g.txt")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		out, _ := e.shAs(agentUID, agentGID, "cat src/g.txt")
		return out == "gamma\n"
	}, "reading through the mount sees the file replaced in the source")
}

// TestCachedPathHardLink: a write through a second name of the file is
// decided and recorded as any other; a name outside the scope is not
// made.
func TestCachedPathHardLink(t *testing.T) {
	e := mountCached(t, "INT-001", map[string]string{"src/a.txt": "one\n"})
	e.agentDenied("ln src/a.txt outside.txt")
	e.agent("ln src/a.txt src/b.txt && echo two >> src/b.txt")
	waitFor(t, func() bool {
		for _, r := range e.records() {
			if r.Gov().Event == ledger.EventWrite && (r.Path() == "src/a.txt" || r.Path() == "src/b.txt") &&
				ledger.Str(r.Gov().PostHash) == shaOf([]byte("one\ntwo\n")) {
				return true
			}
		}
		return false
	}, "the write through the link recorded")
	if out := e.agent("cat src/a.txt"); out != "one\ntwo\n" {
		t.Fatalf("src/a.txt through the mount: %q", out)
	}
}

// TestCachedPathWritesAfterSelectAreDecidedAnew: a descriptor kept open
// across a select writes under the intent selected since; what it wrote
// before is recorded under the intent it was written under, before the
// select.
func TestCachedPathWritesAfterSelectAreDecidedAnew(t *testing.T) {
	e := mountCached(t, "INT-001", map[string]string{"src/a.txt": "one\n"})
	out, _ := e.shAs(agentUID, agentGID, `exec 3>>src/a.txt
echo two >&3 || exit 10
echo INT-005 > .intentfs/active || exit 11
if echo three >&3; then exit 12; fi
exit 0`)
	if strings.Contains(out, "exit") {
		t.Fatal(out)
	}
	if got, _ := e.srcContent("src/a.txt"); got != "one\ntwo\n" {
		t.Fatalf("src/a.txt is %q, want the write before the select only", got)
	}
	recs := e.records()
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
	e := mountCached(t, "INT-001", map[string]string{"src/m.bin": "mmmm"})
	out, err := e.shAs(agentUID, agentGID, `python3 -c '
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
	if got, _ := e.srcContent("src/m.bin"); got != "mmmm" {
		t.Fatalf("src/m.bin is %q in the source", got)
	}
}
