package fence

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
	"github.com/intentfs/intentfs/ledger"
)

// The attacks of an unprivileged agent on the cached data path, where the
// kernel sends no OPEN and writes arrive with handle 0: each must leave
// the source (and what the mount shows of it) unchanged, or be recorded
// correctly.

// attackSeed is the tree every attack starts from: README.md is outside
// INT-001's scope, src/ inside it.
func attackSeed() map[string]string {
	return map[string]string{"README.md": "readme\n", "src/a.txt": "one\n"}
}

// agentPy runs a python3 program as the agent in the mount and returns
// its output; the program reports what happened, the test judges it.
func agentPy(e *testenv.Env, prog string) string {
	e.T.Helper()
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "python3 -c '"+prog+"'")
	if err != nil {
		e.T.Fatalf("as the agent, python3: %v\n%s", err, out)
	}
	return out
}

// unchanged fails the test unless rel holds want both in the source and
// as a fresh reader of the mount sees it (the page cache included).
func unchanged(e *testenv.Env, rel, want string) {
	e.T.Helper()
	if got, _ := e.SrcContent(rel); got != want {
		e.T.Fatalf("%s in the source is %q, want %q", rel, got, want)
	}
	b, err := os.ReadFile(filepath.Join(e.Mnt, rel))
	if err != nil {
		e.T.Fatal(err)
	}
	if string(b) != want {
		e.T.Fatalf("%s read through the mount is %q (the source holds %q)", rel, b, want)
	}
}

// TestCachedAttackMappedWriteOutOfScope: a shared writable mapping of a
// file outside the scope, written and unmapped without msync: the
// writeback is refused, and no reader of the mount sees the agent's bytes
// either (the page cache must not keep what the source refused).
func TestCachedAttackMappedWriteOutOfScope(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", attackSeed())
	out := agentPy(e, `
import mmap, os
fd = os.open("README.md", os.O_RDWR)
m = mmap.mmap(fd, 7, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[0:6] = b"HACKED"
m.close()
os.close(fd)
print("unmapped")
`)
	t.Logf("agent: %s", strings.TrimSpace(out))
	if got, _ := e.SrcContent("README.md"); got != "readme\n" {
		t.Fatalf("README.md in the source is %q", got)
	}
	// The refused writeback's pages are dropped apart from the WRITE
	// request (the kernel waits for that request before it drops them):
	// a read in between can still see them (docs/security.md, shared
	// writable mappings), so the mount is polled until they are gone.
	testenv.WaitFor(t, func() bool {
		b, err := os.ReadFile(filepath.Join(e.Mnt, "README.md"))
		return err == nil && string(b) == "readme\n"
	}, "the mount to drop the refused pages of README.md")
	if out := cachedAgent(e, "cat README.md"); out != "readme\n" {
		t.Fatalf("the agent reads README.md back as %q", out)
	}
}

// TestCachedAttackFallocate: punching a hole, zeroing a range, collapsing
// a range and growing a file outside the scope are refused; a hole
// punched in scope is recorded with its pre-image.
func TestCachedAttackFallocate(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"README.md": strings.Repeat("r", 8192), "src/a.txt": strings.Repeat("a", 8192)})
	for _, cmd := range []string{
		"fallocate -p -o 0 -l 4096 README.md",
		"fallocate -z -o 0 -l 4096 README.md",
		"fallocate -c -o 0 -l 4096 README.md",
		"fallocate -o 0 -l 65536 README.md",
		"fallocate -i -o 0 -l 4096 README.md",
	} {
		out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, cmd)
		if err == nil {
			t.Errorf("%s succeeded:\n%s", cmd, out)
		}
	}
	unchanged(e, "README.md", strings.Repeat("r", 8192))
	cachedAgent(e, "fallocate -p -o 0 -l 4096 src/a.txt")
	want := strings.Repeat("\x00", 4096) + strings.Repeat("a", 4096)
	unchanged(e, "src/a.txt", want)
	r := e.WaitRecord("punched hole", testenv.Event(ledger.EventWrite, "src/a.txt"))
	if ledger.Str(r.Gov().PostHash) != testenv.ShaOf([]byte(want)) || r.Gov().PreImage != "stored" {
		t.Fatalf("hole recorded post %s pre-image %q", ledger.Str(r.Gov().PostHash), r.Gov().PreImage)
	}
}

// TestCachedAttackKernelCopies: copy_file_range, sendfile and splice into
// a file outside the scope, each from a file the agent may read, are
// refused.
func TestCachedAttackKernelCopies(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", attackSeed())
	out := agentPy(e, `
import os
src = os.open("src/a.txt", os.O_RDONLY)
dst = os.open("README.md", os.O_WRONLY)
def attempt(name, fn):
    try:
        n = fn()
        print(name, "wrote", n)
    except OSError as e:
        print(name, "refused", e.errno)
attempt("copy_file_range", lambda: os.copy_file_range(src, dst, 4, 0, 0))
attempt("sendfile", lambda: os.sendfile(dst, src, 0, 4))
r, w = os.pipe()
os.write(w, b"PIPE")
attempt("splice", lambda: os.splice(r, dst, 4, offset_dst=0))
`)
	if strings.Contains(out, "wrote") {
		t.Errorf("a copy into README.md was not refused:\n%s", out)
	}
	unchanged(e, "README.md", "readme\n")
}

// TestCachedAttackDirectIO: O_DIRECT writes bypass the page cache; they
// are still decided.
func TestCachedAttackDirectIO(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", attackSeed())
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "head -c 4096 /dev/zero | dd of=README.md bs=4096 oflag=direct conv=notrunc status=none")
	if err == nil {
		t.Errorf("an O_DIRECT write into README.md succeeded:\n%s", out)
	}
	unchanged(e, "README.md", "readme\n")
}

// TestCachedAttackDescriptorsAcrossSelect: a descriptor opened while
// src/ was in scope, used after a select took it out: ftruncate, a write
// by a forked child, a write after a pause and a write through a
// /proc/self/fd re-open are all decided under the intent in force.
func TestCachedAttackDescriptorsAcrossSelect(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", attackSeed())
	out, _ := e.ShAs(testenv.AgentUID, testenv.AgentGID, `exec 3>>src/a.txt 4<src/a.txt
/bin/echo two >&3 || exit 10
sleep 0.15
echo INT-005 > .intentfs/active || exit 11
if python3 -c 'import os; os.ftruncate(3, 0)'; then echo "ftruncate went through"; fi
if (/bin/echo child >&3); then echo "child write went through"; fi
sleep 0.15
if /bin/echo late >&3; then echo "late write went through"; fi
if /bin/echo proc >> /proc/self/fd/4; then echo "proc re-open went through"; fi
exit 0`)
	if strings.Contains(out, "went through") || strings.Contains(out, "exit") {
		t.Fatalf("after the select:\n%s", out)
	}
	unchanged(e, "src/a.txt", "one\ntwo\n")
	r := e.WaitRecord("the write before the select", testenv.Event(ledger.EventWrite, "src/a.txt"))
	if ledger.Str(r.Gov().IntentID) != "INT-001" || ledger.Str(r.Gov().PostHash) != testenv.ShaOf([]byte("one\ntwo\n")) {
		t.Fatalf("recorded under %s with post %s", ledger.Str(r.Gov().IntentID), ledger.Str(r.Gov().PostHash))
	}
}

// TestCachedAttackAccessACLRead: a file whose access ACL denies the
// agent what its mode bits grant others must not be readable through the
// mount, even once another user's read has filled the page cache.
func TestCachedAttackAccessACLRead(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"README.md": "readme\n", "src/secret.txt": "classified\n"})
	if out, err := testenv.CommandIn(e.Src, "setfacl", "-m", "u:1000:---", "src/secret.txt").CombinedOutput(); err != nil {
		t.Skipf("setfacl on the source: %v %s", err, out)
	}
	if err := os.Chown(filepath.Join(e.Src, "src/secret.txt"), 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(filepath.Join(e.Mnt, "src/secret.txt")); err != nil {
		t.Fatal(err)
	}
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "cat src/secret.txt")
	if err == nil || strings.Contains(out, "classified") {
		t.Fatalf("the agent read a file its ACL denies it: err=%v %q", err, out)
	}
}

// TestCachedAttackSymlinkSwappedInSource: a file the agent has read is
// replaced in the source by a symlink to a file only root may read; the
// mount never serves the symlink's target as the file.
func TestCachedAttackSymlinkSwappedInSource(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", attackSeed())
	testenv.WriteFile(t, filepath.Join(e.Src, "root-only"), "topsecret\n")
	if err := os.Chmod(filepath.Join(e.Src, "root-only"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(e.Src, "root-only"), 0, 0); err != nil {
		t.Fatal(err)
	}
	cachedAgent(e, "cat src/a.txt")
	p := filepath.Join(e.Src, "src/a.txt")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.Src, "root-only"), p); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		out, _ := e.ShAs(testenv.AgentUID, testenv.AgentGID, "cat src/a.txt; /bin/echo x >> src/a.txt")
		if strings.Contains(out, "topsecret") {
			t.Fatalf("the agent read the symlink's target: %q", out)
		}
	}
	if got, _ := e.SrcContent("root-only"); got != "topsecret\n" {
		t.Fatalf("root-only is %q", got)
	}
}

// TestCachedAttackTwoSessionsOneFile: a session whose intent owns
// everything keeps README.md's writer open, writing every 50 ms; another
// session, whose intent owns src/ only, appends to the same file
// meanwhile. Each write is decided for its own process: the second
// session's are refused, and the first's are recorded under its intent.
func TestCachedAttackTwoSessionsOneFile(t *testing.T) {
	// Serial: it starts agent sessions, whose mount namespaces copy every mount of the other tests (serving them past their unmount until the session ends) and cover each FUSE mount as they start.
	testenv.Serial(t)
	t.Setenv("INTENTFS_DATA_PATH", "cached")
	e := testenv.MountForSessions(t, "")
	wide := e.Session("--intent", "INT-005", "--name", "wide", "--", "sh", "-c",
		"i=0; while [ $i -lt 40 ]; do /bin/echo wide >> README.md || exit 9; sleep 0.05; i=$((i+1)); done")
	var wideOut strings.Builder
	wide.Stdout, wide.Stderr = &wideOut, &wideOut
	if err := wide.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, func() bool {
		got, _ := e.SrcContent("README.md")
		return strings.Contains(got, "wide")
	}, "the wide session writing README.md")
	out, code := e.RunSession("--intent", "INT-001", "--name", "narrow", "--", "sh", "-c",
		"i=0; while [ $i -lt 5 ]; do /bin/echo narrow >> README.md && echo WENT; sleep 0.07; i=$((i+1)); done; true")
	if code != 0 || strings.Contains(out, "WENT") || !strings.Contains(out, "Permission denied") {
		t.Fatalf("the narrow session's appends to README.md (exit %d):\n%s", code, out)
	}
	if err := wide.Wait(); err != nil {
		t.Fatalf("the wide session: %v\n%s", err, wideOut.String())
	}
	if got, _ := e.SrcContent("README.md"); strings.Contains(got, "narrow") {
		t.Fatalf("README.md holds the narrow session's write:\n%s", got)
	}
	testenv.WaitFor(t, func() bool {
		for _, r := range e.Records() {
			if r.Gov().Event == ledger.EventWrite && r.Path() == "README.md" && ledger.Str(r.Gov().IntentID) != "INT-005" {
				t.Fatalf("a write of README.md recorded under %s", ledger.Str(r.Gov().IntentID))
			}
			if r.Gov().Event == ledger.EventWrite && r.Path() == "README.md" && ledger.Str(r.Gov().PostHash) == e.Sha("README.md") {
				return true
			}
		}
		return false
	}, "the wide session's last write recorded under INT-005")
}

// TestCachedAttackRenameOverAWrittenFile: the agent appends to src/a.txt
// and, before its writes pause, renames src/c.txt over it. What was
// written to the file replaced must be recorded before the rename, under
// the name it had: recorded after it, the ledger's last word on
// src/a.txt would be the replaced content (and undoing that "write"
// would put it back over the file now there).
func TestCachedAttackRenameOverAWrittenFile(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/a.txt": "aaa\n", "src/c.txt": "ccc\n"})
	cachedAgent(e, "exec 3>>src/a.txt; /bin/echo first >&3 && mv src/c.txt src/a.txt")
	e.D.Status() // records what the writers wrote
	write, rename := -1, -1
	for i, r := range e.Records() {
		switch {
		case r.Gov().Event == ledger.EventWrite && r.Path() == "src/a.txt":
			if ledger.Str(r.Gov().PostHash) != testenv.ShaOf([]byte("aaa\nfirst\n")) {
				t.Errorf("a write of src/a.txt recorded with post %s", ledger.Str(r.Gov().PostHash))
			}
			write = i
		case r.Gov().Event == ledger.EventRename && r.Path() == "src/a.txt":
			rename = i
		}
	}
	if write < 0 || rename < 0 || write > rename {
		t.Fatalf("the write of the replaced src/a.txt is record %d, the rename over it %d: want the write first", write, rename)
	}
	unchanged(e, "src/a.txt", "ccc\n")
}

// TestCachedAttackWritesToAReplacedFile: a process keeps writing through
// its descriptor after the file was renamed over or unlinked. The bytes
// go to a file no longer in the tree; recorded under the name it had,
// they would make the ledger describe the file now there (or a deleted
// one) with content it does not hold.
func TestCachedAttackWritesToAReplacedFile(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/a.txt": "aaa\n", "src/c.txt": "ccc\n", "src/u.txt": "uuu\n"})
	out := agentPy(e, `
import os
for name, gone in (("src/a.txt", lambda: os.rename("src/c.txt", "src/a.txt")), ("src/u.txt", lambda: os.unlink("src/u.txt"))):
    fd = os.open(name, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"first\n")
    gone()
    os.write(fd, b"orphan\n")
    os.close(fd)
print("done")
`)
	if !strings.Contains(out, "done") {
		t.Fatalf("the agent: %s", out)
	}
	e.D.Status() // records what the writers wrote
	last := map[string]*ledger.Record{}
	for _, r := range e.Records() {
		if p := r.Path(); p == "src/a.txt" || p == "src/u.txt" {
			last[p] = r
		}
	}
	if r := last["src/a.txt"]; r == nil || ledger.Str(r.Gov().PostHash) != testenv.ShaOf([]byte("ccc\n")) {
		t.Errorf("the last record of src/a.txt, which holds ccc: %s", describeRecord(r))
	}
	if r := last["src/u.txt"]; r == nil || r.Gov().Event != ledger.EventDelete {
		t.Errorf("the last record of src/u.txt, which is gone: %s", describeRecord(r))
	}
	unchanged(e, "src/a.txt", "ccc\n")
}

// describeRecord is a record's event, path and content hashes, for a
// failure message.
func describeRecord(r *ledger.Record) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s %s -> %s", r.Gov().Event, r.Path(), ledger.Str(r.Gov().PreHash), ledger.Str(r.Gov().PostHash))
}
