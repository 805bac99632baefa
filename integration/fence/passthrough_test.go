package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestReadsAndWritesBypassTheDaemon checks kernel passthrough: with it
// active, the data of an open file never travels through the daemon, so
// the daemon sees no READ or WRITE requests at all.
func TestReadsAndWritesBypassTheDaemon(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-002", nil)
	if testenv.TestDataPath() == "cached" {
		readsFromThePageCache(t, e)
		return
	}
	if !e.D.Status().Passthrough {
		t.Skip("the kernel offers no FUSE passthrough here (Linux 6.9+ and a root daemon are needed)")
	}
	data := bytes.Repeat([]byte("passthrough "), 4<<20/12)
	p := filepath.Join(e.Mnt, "big.bin")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, err %v", len(got), err)
	}
	ops := e.D.Status().Ops
	if ops["READ"] != 0 || ops["WRITE"] != 0 {
		t.Fatalf("data went through the daemon: %v", ops)
	}
	if ops["FLUSH"] != 0 {
		t.Fatalf("close(2) cost a FLUSH round trip: %v", ops)
	}
	if ops["CREATE"] == 0 || ops["OPEN"] == 0 {
		t.Fatalf("request counts look wrong: %v", ops)
	}
	// The content was still hashed and recorded, from the source file.
	r := e.WaitRecord("create", testenv.Event("create", "big.bin"))
	if r.Gov().PostHash == nil || *r.Gov().PostHash != testenv.ShaOf(data) {
		t.Fatal("post hash of a passthrough write is wrong")
	}
}

// readsFromThePageCache is TestReadsAndWritesBypassTheDaemon on the cached
// data path, which has no kernel passthrough: writes reach the daemon
// (they are decided there), and reads of a file the page cache holds
// reach it not at all, open after open, with no OPEN, READ, FLUSH or
// RELEASE.
func readsFromThePageCache(t *testing.T, e *testenv.Env) {
	data := bytes.Repeat([]byte("page cache "), 4<<20/11)
	p := filepath.Join(e.Mnt, "big.bin")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.WaitRecord("create", testenv.Event("create", "big.bin"))
	if r.Gov().PostHash == nil || *r.Gov().PostHash != testenv.ShaOf(data) {
		t.Fatal("post hash of the cached path's write is wrong")
	}
	// The source watch may still drop the pages for the daemon's own
	// writes of the file a little later: the reads must reach a state
	// where a whole read costs no request.
	var last string
	testenv.WaitFor(t, func() bool {
		before := e.D.Status().Ops
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, err %v", len(got), err)
		}
		after := e.D.Status().Ops
		last = ""
		for _, op := range []string{"OPEN", "READ", "FLUSH", "RELEASE"} {
			if after[op] != before[op] {
				last += fmt.Sprintf(" %s: %d before, %d after;", op, before[op], after[op])
			}
		}
		if last != "" {
			t.Logf("a read reached the daemon:%s", last)
		}
		return last == ""
	}, "a warm read of the file to send no OPEN, READ, FLUSH or RELEASE")
}
