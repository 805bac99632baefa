package fence

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
	"github.com/intentfs/intentfs/ledger"
)

// On the cached data path the kernel keeps each file's size and learns of
// a change made directly in the source from the source watch, a few
// milliseconds later; an O_APPEND write takes its offset from the size it
// keeps. An append through the mount right after a human's append in the
// source must still land after the human's bytes, never over them.

// agentAfterHuman runs script as the agent in the mount with fd 3 open for
// appending on rel in the source, as the human's editor would hold it:
// the script writes the human's change to fd 3 and its own through the
// mount a few microseconds apart, well inside the time the source watch
// takes to tell the kernel (the watch waits settleDelay, 2ms, before it
// even looks), so the kernel's size is stale when the agent writes.
func agentAfterHuman(e *testenv.Env, rel, script string) string {
	e.T.Helper()
	human, err := os.OpenFile(filepath.Join(e.Src, rel), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		e.T.Fatal(err)
	}
	defer human.Close()
	cmd := testenv.CommandIn(e.Mnt, "setpriv", "--reuid="+strconv.Itoa(testenv.AgentUID), "--regid="+strconv.Itoa(testenv.AgentGID), "--clear-groups", "sh", "-c", script)
	cmd.ExtraFiles = []*os.File{human}
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.T.Fatalf("as the agent, %s: %v\n%s", script, err, out)
	}
	return string(out)
}

// appendRecord waits for the record of the agent's write to rel and fails
// the test unless it goes from pre to post.
func appendRecord(e *testenv.Env, rel, pre, post string) {
	e.T.Helper()
	r := e.WaitRecord("the agent's append to "+rel, testenv.Event(ledger.EventWrite, rel))
	if got, want := ledger.Str(r.Gov().PreHash), testenv.ShaOf([]byte(pre)); got != want {
		e.T.Fatalf("%s: the record's content before is %s, want %s (the source after the human's append)", rel, got, want)
	}
	if got, want := ledger.Str(r.Gov().PostHash), testenv.ShaOf([]byte(post)); got != want {
		e.T.Fatalf("%s: the record's content after is %s, want %s (what the source holds)", rel, got, want)
	}
}

// mountShows waits until a fresh read of rel through the mount gives want:
// the kernel must forget the size and pages it held before the append.
func mountShows(e *testenv.Env, rel, want string) {
	e.T.Helper()
	var got []byte
	testenv.WaitFor(e.T, func() bool {
		got, _ = os.ReadFile(filepath.Join(e.Mnt, rel))
		return string(got) == want
	}, "the mount to show", rel, "as the source holds it")
}

// TestCachedAppendAfterSourceChange: the agent reads a file through the
// mount (the kernel caches its size and pages), the human appends a line
// in the source, and at once the agent appends with `>>`: the source ends
// with both lines, the human's first, and the record says so.
func TestCachedAppendAfterSourceChange(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/log.txt": "seed\n"})
	agentAfterHuman(e, "src/log.txt", `
cat src/log.txt >/dev/null
printf 'by the human\n' >&3
printf 'by the agent\n' >> src/log.txt
`)
	want := "seed\nby the human\nby the agent\n"
	if got, _ := e.SrcContent("src/log.txt"); got != want {
		t.Fatalf("src/log.txt in the source is %q, want %q", got, want)
	}
	appendRecord(e, "src/log.txt", "seed\nby the human\n", want)
	mountShows(e, "src/log.txt", want)
}

// TestCachedAppendLargeAfterSourceChange: one write(2) larger than a FUSE
// WRITE request reaches the daemon as several requests, each at the
// kernel's stale offset: each must land after the one before it, all
// after the human's line.
func TestCachedAppendLargeAfterSourceChange(t *testing.T) {
	testenv.Serial(t)
	e := mountCached(t, "INT-001", map[string]string{"src/big.txt": "seed\n"})
	const size = 1 << 20
	out := agentAfterHuman(e, "src/big.txt", `python3 -c '
import os
with open("src/big.txt", "rb") as f:
    f.read()
fd = os.open("src/big.txt", os.O_WRONLY | os.O_APPEND)
blob = b"".join(b"%07d\n" % i for i in range(`+strconv.Itoa(size/8)+`))
os.write(3, b"by the human\n")
print(os.write(fd, blob))
os.close(fd)
'`)
	if strings.TrimSpace(out) != strconv.Itoa(size) {
		t.Fatalf("the agent's write(2) returned %q, want %d", out, size)
	}
	var blob strings.Builder
	for i := range size / 8 {
		blob.WriteString(strconv.Itoa(10000000 + i)[1:] + "\n")
	}
	want := "seed\nby the human\n" + blob.String()
	if got, _ := e.SrcContent("src/big.txt"); got != want {
		head := func(s string) string { return s[:min(len(s), 40)] }
		t.Fatalf("src/big.txt in the source: %d bytes starting %q, want %d bytes starting %q", len(got), head(got), len(want), head(want))
	}
	appendRecord(e, "src/big.txt", "seed\nby the human\n", want)
	mountShows(e, "src/big.txt", want)
}
