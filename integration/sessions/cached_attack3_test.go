package sessions

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentfs/intentfs/integration/testenv"
)

// holdContext is a session's process that keeps .intentfs/context open
// and reads it again and again through that descriptor, its pid written
// to src/holder.pid (in INT-001's scope) once it holds it.
const holdContext = `
import os, time
fd = os.open(".intentfs/context", os.O_RDONLY)
with open("src/holder.pid", "w") as f: f.write(str(os.getpid()) + " " + str(fd))
stop = time.monotonic() + 8
while time.monotonic() < stop and not os.path.exists("src/holder.stop"):
    os.pread(fd, 65536, 0)
print("held")
`

// reachThroughProc is the agent's process outside any session, of the
// same uid: it finds the holder (its pid in the session's namespace is
// not the one /proc here shows), opens the holder's descriptor through
// /proc again and again and reads it, counting what it read of the
// session's context.
const reachThroughProc = `
import os, sys, time
nspid, fd = open("src/holder.pid").read().split()
path = ""
for p in os.listdir("/proc"):
    try:
        c = open("/proc/%s/cmdline" % p, "rb").read() if p.isdigit() else b""
        if c.startswith(b"python3") and b"holder.pid" in c and int(p) != os.getpid():
            path = "/proc/%s/fd/%s" % (p, fd)
    except OSError: pass
if not path or not os.readlink(path).endswith("/.intentfs/context"):
    sys.exit("no descriptor of the holder found: " + path)
stop = time.monotonic() + 3
tries = leaked = refused = 0
why = ""
while time.monotonic() < stop:
    tries += 1
    try:
        g = os.open(path, os.O_RDONLY)
        try:
            if b"INT-001" in os.pread(g, 65536, 0): leaked += 1
        finally:
            os.close(g)
    except OSError as e:
        refused += 1
        why = e.strerror
print("tries=%d leaked=%d refused=%d %s" % (tries, leaked, refused, why))
`

// TestCachedAttackProcFdOfAnotherSession: on the cached data path a
// process of the agent's uid outside the session opens, through
// /proc/<pid>/fd, the descriptor a session's process holds on its own
// .intentfs/context (its view's inode), while that process reads it. It
// must never read the session's content (the kernel's page cache and
// attributes of that inode, kept for a clock tick, answer without asking
// the daemon).
func TestCachedAttackProcFdOfAnotherSession(t *testing.T) {
	testenv.Serial(t)
	t.Setenv("INTENTFS_DATA_PATH", "cached")
	e := testenv.MountForSessions(t, "")
	e.ReachableByAgent()
	holder := e.Session("--intent", "INT-001", "--name", "holder", "--", "sh", "-c", "cd "+e.Mnt+" && exec python3 -c '"+holdContext+"'")
	var holderOut strings.Builder
	holder.Stdout, holder.Stderr = &holderOut, &holderOut
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = os.WriteFile(filepath.Join(e.Src, "src", "holder.stop"), nil, 0o644)
		_ = holder.Wait()
	}()
	testenv.WaitFor(t, func() bool {
		b, err := os.ReadFile(filepath.Join(e.Src, "src", "holder.pid"))
		return err == nil && len(strings.Fields(string(b))) == 2
	}, "the session's holder writes its pid")
	start := time.Now()
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "cd "+e.Mnt+" && python3 -c '"+reachThroughProc+"'")
	if err != nil {
		t.Fatalf("as the agent outside the session: %v\n%s", err, out)
	}
	t.Logf("outside the session (%s): %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
	var tries, leaked, refused int
	if _, err := fmt.Sscanf(out[strings.Index(out, "tries="):], "tries=%d leaked=%d refused=%d", &tries, &leaked, &refused); err != nil || tries == 0 {
		t.Fatalf("the reader did not run: %v\n%s\nholder: %s", err, out, holderOut.String())
	}
	if leaked > 0 {
		t.Fatalf("a process outside the session read the session's .intentfs/context %d of %d times through /proc/<pid>/fd", leaked, tries)
	}
}
