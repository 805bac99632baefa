package fence

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/integration/testenv"
	"github.com/intentfs/intentfs/ledger"
)

// viewEvictor is the agent's attempt to have the kernel keep an entry of
// .intentfs/active: one thread looks the name up again and again while
// short-lived threads each look .intentfs/check up once (a view per
// thread, the kernel naming the thread in the request), so that the
// oldest views, its own active's among them, are let go while its lookup
// of that view is still being answered. The daemon must answer every
// lookup of a per-view name with an entry the kernel does not keep,
// however many views come and go.
const viewEvictor = `
import os, threading, time
stop = time.monotonic() + float(os.environ.get("EVICT_SECONDS", "6"))
done = False
def look():
    while not done:
        try: os.stat(".intentfs/active")
        except OSError: pass
def one():
    try: os.stat(".intentfs/check")
    except OSError: pass
lookers = [threading.Thread(target=look) for _ in range(2)]
for t in lookers: t.start()
made = 0
while time.monotonic() < stop:
    batch = [threading.Thread(target=one) for _ in range(64)]
    for t in batch: t.start()
    for t in batch: t.join()
    made += len(batch)
done = True
for t in lookers: t.join()
print("views", made)
`

// TestCachedAttackViewEvictionKeepsNoEntry: the agent evicts views (past
// maxViews) while it looks up its own .intentfs/active. Another reader
// (root here, of another view) must keep reaching its own view: a kernel
// entry kept for the agent's inode would hand that inode to every later
// walk of the name (an hour, with the source watched), where the reader
// is refused (EACCES) or, within a clock tick of the agent's read, reads
// the agent's content from the page cache.
func TestCachedAttackViewEvictionKeepsNoEntry(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", attackSeed())
	active := filepath.Join(e.Mnt, ".intentfs", "active")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		refused int
		reads   int
		first   error
	)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := os.ReadFile(active)
			mu.Lock()
			reads++
			if err != nil {
				refused++
				if first == nil {
					first = err
				}
			}
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "cd "+e.Mnt+" && EVICT_SECONDS=6 python3 -c '"+viewEvictor+"'")
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("as the agent: %v\n%s", err, out)
	}
	if !strings.Contains(out, "views") {
		t.Fatalf("the evictor did not run:\n%s", out)
	}
	// After the storm, too: an entry kept then still stands.
	if _, err := os.ReadFile(active); err != nil {
		refused++
		if first == nil {
			first = err
		}
	}
	t.Logf("agent: %s; root's reads: %d, refused %d", strings.TrimSpace(out), reads, refused)
	if refused > 0 {
		t.Fatalf("root's reads of .intentfs/active were refused %d of %d times (first: %v, EACCES: %v): a kernel entry kept the agent's view",
			refused, reads, first, errors.Is(first, syscall.EACCES))
	}
}

// TestCachedAttackLinksToControlFiles: the agent links its view of the
// control files into the workspace, a hard link (refused: the control
// files have no place in the source) and a symlink (a path, walked anew
// by each reader: root reading it reads root's own view, never the
// agent's), and tries to grow or cut a control file in place.
func TestCachedAttackLinksToControlFiles(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", attackSeed())
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `cd `+e.Mnt+` || exit 9
cat .intentfs/active >/dev/null
ln .intentfs/active src/hard 2>/dev/null && echo "HARD LINKED"
ln -s ../.intentfs/active src/soft || echo "no symlink"
truncate -s 100 .intentfs/status 2>/dev/null && echo "STATUS GREW"
printf 'x' >> .intentfs/denials 2>/dev/null && echo "DENIALS APPENDED"
cat src/soft`)
	if err != nil {
		t.Fatalf("as the agent: %v\n%s", err, out)
	}
	t.Logf("the agent:\n%s", out)
	for _, bad := range []string{"HARD LINKED", "STATUS GREW", "DENIALS APPENDED"} {
		if strings.Contains(out, bad) {
			t.Errorf("the agent: %s\n%s", bad, out)
		}
	}
	if strings.Contains(out, "no symlink") {
		t.Fatalf("the agent could not make a symlink in its scope:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(e.Src, "src", "hard")); err == nil {
		t.Errorf("a hard link of a control file is in the source")
	}
	// Root reads through the agent's symlink, at once and again: its own
	// view each time.
	for range 50 {
		if _, err := os.ReadFile(filepath.Join(e.Mnt, "src", "soft")); err != nil {
			t.Fatalf("root reading the agent's symlink to .intentfs/active: %v", err)
		}
		if _, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "cat "+e.Mnt+"/src/soft >/dev/null"); err != nil {
			t.Fatalf("the agent reading its symlink: %v", err)
		}
	}
}

// TestCachedAttackAppendsOutOfScope: O_APPEND writes land at the source's
// real end on the cached data path (pwritev2 with RWF_APPEND); the agent
// appends to a file outside its scope right after the source grew under
// the kernel's kept size (a human's line), by `>>`, by pwrite on an
// O_APPEND descriptor and by pwritev2 with RWF_NOAPPEND on one: every
// write is refused and the file stays as the human left it.
func TestCachedAttackAppendsOutOfScope(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", attackSeed())
	if _, err := os.ReadFile(filepath.Join(e.Mnt, "README.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Src, "README.md"), []byte("readme\nhuman\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := agentPy(e, `
import os
os.chdir("`+e.Mnt+`")
def attempt(name, f):
    try:
        f()
        print("WROTE", name)
    except OSError as e:
        print("refused", name, e.errno)
def shell():
    if os.system("printf agent >> README.md 2>/dev/null") != 0:
        raise OSError(13, "shell")
attempt("shell", shell)
def pw():
    fd = os.open("README.md", os.O_WRONLY | os.O_APPEND)
    try: os.pwrite(fd, b"agent", 0)
    finally: os.close(fd)
attempt("pwrite", pw)
def noappend():
    fd = os.open("README.md", os.O_WRONLY | os.O_APPEND)
    try: os.pwritev(fd, [b"agent"], 0, getattr(os, "RWF_NOAPPEND", 0x20))
    finally: os.close(fd)
attempt("noappend", noappend)
`)
	if strings.Contains(out, "WROTE") || strings.Count(out, "refused") != 3 {
		t.Errorf("the agent's appends outside its scope:\n%s", out)
	}
	unchanged(e, "README.md", "readme\nhuman\n")
}

// TestCachedAttackRecreateAfterSourceRemoval: a file the kernel still has
// an entry for is removed in the source (a human's rm); the agent's
// `> file` then gets ESTALE from the daemon and the kernel walks the path
// again and creates the file: outside the scope that creation is refused
// on the retry as on any walk, and nothing is made in the source; inside
// it the file is made and recorded.
func TestCachedAttackRecreateAfterSourceRemoval(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", attackSeed())
	cachedAgent(e, "cat README.md src/a.txt >/dev/null")
	for _, rel := range []string{"README.md", "src/a.txt"} {
		if err := os.Remove(filepath.Join(e.Src, rel)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, `cd `+e.Mnt+` || exit 9
(: > README.md) && echo "README MADE"
echo again > src/a.txt && echo "a made"`)
	if err != nil {
		t.Fatalf("as the agent: %v\n%s", err, out)
	}
	if strings.Contains(out, "README MADE") {
		t.Errorf("the agent re-created README.md outside its scope:\n%s", out)
	}
	if !strings.Contains(out, "a made") {
		t.Errorf("the agent could not re-create src/a.txt in its scope:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(e.Src, "README.md")); err == nil {
		t.Errorf("README.md is in the source again")
	}
	if got, _ := e.SrcContent("src/a.txt"); got != "again\n" {
		t.Errorf("src/a.txt in the source is %q, want %q", got, "again\n")
	}
	e.WaitRecord("the re-creation", testenv.Event(ledger.EventCreate, "src/a.txt"))
}
