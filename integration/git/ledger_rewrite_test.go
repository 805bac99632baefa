package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
)

// TestLedgerRewriteRacesRelease rewrites a file many times in a row, as
// the agent's uid, with `echo ... > f`: each close(2) returns before the
// daemon has the handle's RELEASE, so the next open's O_TRUNC can empty
// the file while the previous handle is still to be recorded. Every
// record must say the content the handle's writes left (never the
// truncated file no handle left), the records of a path must follow on
// from each other, the last one must be the file's final content, and
// intentfs verify must pass.
func TestLedgerRewriteRacesRelease(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.MountPrepared(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/same.go": "old\n", "src/count.go": "old\n"}, func(src string) { testenv.ChownTree(t, src) })
	script := `for i in $(seq 1 100); do echo same > src/same.go; done; for i in $(seq 1 100); do echo $i > src/count.go; done`
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, script); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	if err := e.D.Unmount(); err != nil {
		t.Fatalf("unmount: %v", err)
	}
	left := map[string]bool{testenv.ShaOf([]byte("same\n")): true}
	for i := 1; i <= 100; i++ {
		left[testenv.ShaOf([]byte(strconv.Itoa(i)+"\n"))] = true
	}
	var recs []*ledger.Record
	if err := ledger.Scan(e.D.LedgerPath(), func(_ int, r *ledger.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	posts := map[string]bool{}
	for _, rel := range []string{"src/same.go", "src/count.go"} {
		last, n := testenv.ShaOf([]byte("old\n")), 0
		for i, r := range recs {
			g := r.Gov()
			if r.Path() != rel || g.Event != ledger.EventWrite {
				continue
			}
			n++
			pre, post := ledger.Str(g.PreHash), ledger.Str(g.PostHash)
			if !left[post] {
				t.Errorf("record %d: %s: post_hash %.19s is no content a handle left (%s)", i+1, rel, post, map[bool]string{true: "the empty file", false: "unknown"}[post == ledger.EmptyHash])
			}
			if pre != last {
				t.Errorf("record %d: %s: pre_hash %.19s, but the record before says %.19s", i+1, rel, pre, last)
			}
			last = post
			posts[post] = true
		}
		b, err := os.ReadFile(filepath.Join(e.Src, rel))
		if err != nil {
			t.Fatal(err)
		}
		if want := testenv.ShaOf(b); last != want {
			t.Errorf("%s: the ledger's last record says %.19s, the file is %.19s (%q)", rel, last, want, b)
		}
		t.Logf("%s: %d write records", rel, n)
	}
	// An agent that writes something and at once writes something else
	// over it must not get the first content past the ledger: every
	// version a handle left is some record's post_hash.
	for i := 1; i <= 100; i++ {
		if !posts[testenv.ShaOf([]byte(strconv.Itoa(i)+"\n"))] {
			t.Errorf("src/count.go: the version %d that a handle left is in no record", i)
		}
	}
	testenv.VerifyClean(t, e.Src)
}

// TestLedgerConcurrentWriters has two processes rewrite the same file at
// once, as the agent's uid. Who wrote which bytes cannot be told apart,
// and a version may change between one handle's record and the next
// open's pre-image (writes are not stopped while a file is hashed), but
// the last record must be the final content and nothing may be changed
// behind the ledger's back.
func TestLedgerConcurrentWriters(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.MountPrepared(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/f.go": "old\n"}, func(src string) { testenv.ChownTree(t, src) })
	script := `for w in a b; do ( for i in $(seq 1 100); do echo $w$i > src/f.go; done ) & done; wait`
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, script); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	if err := e.D.Unmount(); err != nil {
		t.Fatalf("unmount: %v", err)
	}
	last, n := "", 0
	if err := ledger.Scan(e.D.LedgerPath(), func(i int, r *ledger.Record) error {
		if g := r.Gov(); r.Path() == "src/f.go" && g.Event == ledger.EventWrite {
			n++
			last = ledger.Str(g.PostHash)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(e.Src, "src/f.go"))
	if err != nil {
		t.Fatal(err)
	}
	if want := testenv.ShaOf(b); last != want {
		t.Errorf("the ledger's last record says %.19s, the file is %.19s (%q)", last, want, b)
	}
	t.Logf("%d write records", n)
	// A version that lived only while the other process was writing may
	// have changed while its bytes were copied to the store; the record
	// then says the copy failed (pre_image), and verify names it. Nothing
	// else may be wrong.
	rep := ledger.Verify(ledger.VerifyOptions{Ledger: e.D.LedgerPath(), Source: e.Src, ListObjects: objects.New(e.Src).List})
	for _, p := range rep.Problems {
		if p.Kind != ledger.ProblemPreImage {
			t.Errorf("verify: %s", p)
		}
	}
}

// TestLedgerTruncateWhileOpen truncates, by name, a file another handle
// has open and has written to, then writes through that handle again. The
// handle's first write is recorded before the truncate, and the records
// of the file follow on from each other to its final content.
func TestLedgerTruncateWhileOpen(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.MountPrepared(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/t.go": "old\n", "src/z.go": "old\n"}, func(src string) { testenv.ChownTree(t, src) })
	script := `exec 3>src/t.go; echo one >&3; truncate -s 2 src/t.go; echo two >&3; exec 3>&-; : > src/z.go`
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, script); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	if err := e.D.Unmount(); err != nil {
		t.Fatalf("unmount: %v", err)
	}
	final := "on\x00\x00two\n"
	want := []string{testenv.ShaOf([]byte("one\n")), testenv.ShaOf([]byte("on")), testenv.ShaOf([]byte(final))}
	last := testenv.ShaOf([]byte("old\n"))
	var posts []string
	if err := ledger.Scan(e.D.LedgerPath(), func(i int, r *ledger.Record) error {
		g := r.Gov()
		if r.Path() != "src/t.go" || (g.Event != ledger.EventWrite && g.Event != ledger.EventTruncate) {
			return nil
		}
		if pre := ledger.Str(g.PreHash); pre != last {
			t.Errorf("record %d (%s): pre_hash %.19s, but the record before says %.19s", i, g.Event, pre, last)
		}
		last = ledger.Str(g.PostHash)
		posts = append(posts, last)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// An open with O_TRUNC that writes nothing has still changed the file.
	emptied := false
	if err := ledger.Scan(e.D.LedgerPath(), func(_ int, r *ledger.Record) error {
		g := r.Gov()
		emptied = emptied || r.Path() == "src/z.go" && g.Event == ledger.EventWrite && ledger.Str(g.PreHash) == testenv.ShaOf([]byte("old\n")) && ledger.Str(g.PostHash) == ledger.EmptyHash
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !emptied {
		t.Errorf("no record of : > src/z.go emptying it")
	}
	if got, _ := e.SrcContent("src/t.go"); got != final {
		t.Fatalf("src/t.go is %q, want %q", got, final)
	}
	if len(posts) != len(want) {
		t.Fatalf("%d content records of src/t.go, want %d (write, truncate, write)", len(posts), len(want))
	}
	for i := range want {
		if posts[i] != want[i] {
			t.Errorf("content record %d of src/t.go says %.19s, want %.19s", i+1, posts[i], want[i])
		}
	}
	testenv.VerifyClean(t, e.Src)
}
