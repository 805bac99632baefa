package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"bufio"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// TestFenceHandleMovedIntoScope: a file opened for writing on an exempt
// path (build/) and then renamed into a governed one must not keep an
// untracked handle, or its later writes would never be recorded: the
// rename starts tracking the handle.
func TestFenceHandleMovedIntoScope(t *testing.T) {
	testenv.Parallel(t)
	e := mountFence(t, testenv.ScopePolicy, "INT-001", map[string]string{".intentignore": "build/\n", "build/.keep": "", "src/.keep": ""},
		func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	const script = `
import os, sys
fd = os.open("build/out.txt", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"exempt\n")
os.rename("build/out.txt", "src/out.txt")
os.write(fd, b"governed\n")
os.close(fd)
`
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "/usr/bin/python3 "+testenv.WorldReadable(t, "moved.py", script)); err != nil {
		t.Fatalf("as uid %d: %v\n%s", testenv.AgentUID, err, out)
	}
	want := testenv.ShaOf([]byte("exempt\ngoverned\n"))
	r := e.WaitRecord("the write through the moved handle", func(r *ledger.Record) bool {
		g := r.Gov()
		return r.Path() == "src/out.txt" && g.Event == ledger.EventWrite && ledger.Str(g.PostHash) == want
	})
	if g := r.Gov(); ledger.Str(g.PreHash) != testenv.ShaOf([]byte("exempt\n")) || ledger.Str(g.IntentID) != "INT-001" {
		t.Errorf("write record: pre %s intent %s; want the content at the rename, under INT-001", ledger.Str(g.PreHash), ledger.Str(g.IntentID))
	}
}

// TestSelectReportsWritersOfAnotherIntent: a handle keeps the intent it
// was opened under; selecting another intent says which files are open
// that way, in the select record and in status, and their changes stay
// recorded under the first intent.
func TestSelectReportsWritersOfAnotherIntent(t *testing.T) {
	testenv.Parallel(t)
	e := mountFence(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/held.txt": "v1\n"}, func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	const hold = `
import os, sys
fd = os.open("src/held.txt", os.O_WRONLY | os.O_APPEND)
print("open", flush=True)
sys.stdin.readline()
os.write(fd, b"v2\n")
os.close(fd)
`
	cmd := testenv.CommandIn(e.Mnt, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "/usr/bin/python3", testenv.WorldReadable(t, "hold.py", hold))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "open\n" {
		t.Fatalf("holder: %q", line)
	}
	if err := e.D.Select("INT-002", &ledger.Process{Comm: "test"}); err != nil {
		t.Fatal(err)
	}
	held := e.D.Status().HeldBy("INT-002")
	if testenv.TestDataPath() == "cached" {
		// No OPEN reaches the daemon on the cached data path: an open
		// holds nothing, and its writes are decided, and recorded, under
		// the intent in force when they are made
		// (TestCachedPathWritesAfterSelectAreDecidedAnew).
		if len(held) != 0 {
			t.Fatalf("held writers after selecting INT-002 on the cached data path = %+v, want none", held)
		}
		stdin.Write([]byte("go\n"))
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		r := e.WaitRecord("the write after the select", func(r *ledger.Record) bool {
			return r.Path() == "src/held.txt" && r.Gov().Event == ledger.EventWrite
		})
		if got := ledger.Str(r.Gov().IntentID); got != "INT-002" {
			t.Errorf("the write after the select is recorded under %q, want INT-002 (the intent in force when it was made)", got)
		}
		return
	}
	if len(held) != 1 || held[0].Path != "src/held.txt" || held[0].Intent != "INT-001" {
		t.Fatalf("held writers after selecting INT-002 = %+v", held)
	}
	sel := e.WaitRecord("the select", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventSelect && ledger.Str(r.Gov().IntentID) == "INT-002"
	})
	if !strings.Contains(sel.Gov().Reason, "src/held.txt (INT-001") {
		t.Errorf("select record's reason = %q, want it to name the held file", sel.Gov().Reason)
	}
	stdin.Write([]byte("go\n"))
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	r := e.WaitRecord("the held handle's write", func(r *ledger.Record) bool {
		return r.Path() == "src/held.txt" && r.Gov().Event == ledger.EventWrite
	})
	if got := ledger.Str(r.Gov().IntentID); got != "INT-001" {
		t.Errorf("the held handle's write is recorded under %q, want INT-001 (the intent it was opened under)", got)
	}
}
