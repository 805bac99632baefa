package fence

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/ledger"
)

// exemptPolicy governs src/ under INT-001; build/ is exempt, as
// `intentfs init` writes it into .orchestration/.intentignore.
const exemptPolicy = `active_intents:
  - id: INT-001
    name: src work
    status: IN_PROGRESS
    owned_scope: ["src/**"]
`

// exemptSeed is a checkout with a tree to move out, a file to swap and
// one outside the scope.
func exemptSeed() map[string]string {
	return map[string]string{
		".orchestration/.intentignore": "build/\n",
		"src/bulk/a.txt":               "alpha\n",
		"src/bulk/b.txt":               "bravo\n",
		"src/bulk/sub/c.txt":           "charlie\n",
		"src/c.txt":                    "original\n",
		"docs/readme":                  "docs\n",
	}
}

// mountExempt mounts exemptSeed under policyYAML, the checkout the
// agent's, reachable by it.
func mountExempt(t *testing.T, policyYAML string) *testenv.Env {
	t.Helper()
	e := testenv.MountPrepared(t, policyYAML, "INT-001", exemptSeed(), func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	return e
}

// TestMoveOutOfGovernedTreeIsARemoval: a governed tree moved into an
// exempt directory and deleted there is recorded as the removal of each
// of its files, with its pre-image, when it leaves the governed tree:
// verify finds nothing deleted behind the ledger's back, and revert
// brings every file back.
func TestMoveOutOfGovernedTreeIsARemoval(t *testing.T) {
	testenv.Parallel(t)
	e := mountExempt(t, exemptPolicy)
	// A write through the mount: the ledger knows a.txt from here on.
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "echo more >> src/bulk/a.txt"); err != nil {
		t.Fatalf("append: %v\n%s", err, out)
	}
	e.WaitRecord("the append to a.txt", testenv.Event(ledger.EventWrite, "src/bulk/a.txt"))
	before := map[string]string{"src/bulk/a.txt": "alpha\nmore\n", "src/bulk/b.txt": "bravo\n", "src/bulk/sub/c.txt": "charlie\n"}
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "mkdir -p build && mv src/bulk build/bulk && rm -rf build/bulk"); err != nil {
		t.Fatalf("mv out and rm: %v\n%s", err, out)
	}
	recs := e.Records()
	for rel, content := range before {
		var del *ledger.Record
		for _, r := range recs {
			if r.Gov().Event == ledger.EventDelete && r.Path() == rel {
				del = r
			}
		}
		if del == nil {
			t.Fatalf("no delete record of %s, which left the governed tree; records:\n%s", rel, describeRecords(recs))
		}
		g := del.Gov()
		if ledger.Str(g.PreHash) != testenv.ShaOf([]byte(content)) || g.PreImage != "stored" {
			t.Errorf("delete record of %s: pre_hash %s, pre_image %q; want %s, stored", rel, ledger.Str(g.PreHash), g.PreImage, testenv.ShaOf([]byte(content)))
		}
		if g.Process == nil || g.Process.Comm != "mv" || !strings.Contains(g.Reason, "build/bulk") {
			t.Errorf("delete record of %s: process %+v, reason %q; want mv, naming where it went", rel, g.Process, g.Reason)
		}
	}
	for _, dir := range []string{"src/bulk/sub", "src/bulk"} {
		if !hasRecord(recs, ledger.EventRmdir, dir) {
			t.Errorf("no rmdir record of %s; records:\n%s", dir, describeRecords(recs))
		}
	}
	testenv.VerifyClean(t, e.Src)

	if out, err := e.CLI("revert", "--mount", e.Mnt, "--intent", "INT-001"); err != nil {
		t.Fatalf("revert: %v\n%s", err, out)
	}
	for rel := range before {
		want := exemptSeed()[rel]
		if got, ok := e.SrcContent(rel); !ok || got != want {
			t.Errorf("after revert %s holds %q (present %v), want %q", rel, got, ok, want)
		}
	}
	testenv.VerifyClean(t, e.Src)
}

// TestMoveOutIsHeldByDeleteRules: the rules on deletions see a move out
// of the governed tree as the removal of each file it takes along: a
// count rule holds a tree of more files than it allows (and the tree
// stays), and lets a single file go.
func TestMoveOutIsHeldByDeleteRules(t *testing.T) {
	testenv.Parallel(t)
	e := mountExempt(t, exemptPolicy+`approvals:
  - name: mass-delete
    ops: [delete]
    more_than: 2
    within: 10s
    timeout: 1s
`)
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "mkdir -p build && mv src/bulk build/bulk")
	if err == nil {
		t.Fatalf("moving a tree of 3 files and 2 directories out passed a rule that holds more than 2 deletions:\n%s", out)
	}
	for _, rel := range []string{"src/bulk/a.txt", "src/bulk/b.txt", "src/bulk/sub/c.txt"} {
		if _, ok := e.SrcContent(rel); !ok {
			t.Errorf("%s is gone after the held move was denied", rel)
		}
	}
	if _, ok := e.SrcContent("build/bulk"); ok {
		t.Errorf("build/bulk exists after the held move was denied")
	}
	testenv.VerifyClean(t, e.Src)
}

// TestMoveOutIsHeldByLargeDeleteRule: larger_than sees the bytes a move
// out of the governed tree destroys.
func TestMoveOutIsHeldByLargeDeleteRule(t *testing.T) {
	testenv.Parallel(t)
	e := mountExempt(t, exemptPolicy+`approvals:
  - name: big-delete
    ops: [delete]
    larger_than: 1KiB
    timeout: 1s
`)
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "head -c 4096 /dev/zero | tr '\\0' x > src/big && mkdir -p build"); err != nil {
		t.Fatalf("seeding: %v\n%s", err, out)
	}
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "mv src/big build/big"); err == nil {
		t.Fatalf("moving 4 KiB out of the governed tree passed a rule on deletions over 1 KiB:\n%s", out)
	}
	if got, ok := e.SrcContent("src/big"); !ok || len(got) != 4096 {
		t.Fatalf("src/big after the held move: %d bytes, present %v", len(got), ok)
	}
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "mv src/c.txt build/c.txt"); err != nil {
		t.Fatalf("moving a small file out: %v\n%s", err, out)
	}
	testenv.VerifyClean(t, e.Src)
}

// TestMoveIntoGovernedTreeIsAWrite: content swapped in an exempt
// directory and moved back into the governed tree is recorded as written
// by the process that moved it, with its hash and where it came from;
// a directory moved in is recorded file by file; a destination outside
// the scope is refused, and so is moving an out-of-scope file out.
func TestMoveIntoGovernedTreeIsAWrite(t *testing.T) {
	testenv.Parallel(t)
	e := mountExempt(t, exemptPolicy)
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "mkdir -p build && mv src/c.txt build/ && echo EVIL > build/c.txt && mv build/c.txt src/"); err != nil {
		t.Fatalf("swap through build/: %v\n%s", err, out)
	}
	recs := e.Records()
	var in *ledger.Record
	for _, r := range recs {
		if r.Path() == "src/c.txt" && (r.Gov().Event == ledger.EventCreate || r.Gov().Event == ledger.EventWrite) {
			in = r
		}
	}
	if in == nil {
		t.Fatalf("no create or write record of src/c.txt moved in from build/; records:\n%s", describeRecords(recs))
	}
	g := in.Gov()
	if ledger.Str(g.PostHash) != testenv.ShaOf([]byte("EVIL\n")) || g.FromPath != "build/c.txt" || g.Process == nil || g.Process.Comm != "mv" {
		t.Errorf("record of src/c.txt: event %s post_hash %s from %q process %+v; want the EVIL hash, from build/c.txt, by mv",
			g.Event, ledger.Str(g.PostHash), g.FromPath, g.Process)
	}
	if !hasRecord(recs, ledger.EventDelete, "src/c.txt") {
		t.Errorf("no delete record of src/c.txt when it left for build/; records:\n%s", describeRecords(recs))
	}

	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "mkdir -p build/d/e && echo one > build/d/e/f && mv build/d src/d"); err != nil {
		t.Fatalf("moving a directory in: %v\n%s", err, out)
	}
	recs = e.Records()
	for _, want := range []struct {
		ev   ledger.Event
		path string
	}{{ledger.EventMkdir, "src/d"}, {ledger.EventMkdir, "src/d/e"}, {ledger.EventCreate, "src/d/e/f"}} {
		if !hasRecord(recs, want.ev, want.path) {
			t.Errorf("no %s record of %s moved in from build/d; records:\n%s", want.ev, want.path, describeRecords(recs))
		}
	}

	for _, cmd := range []string{"echo x > build/x && mv build/x docs/x", "mv docs/readme build/readme"} {
		if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, cmd); err == nil || !strings.Contains(out, "Permission denied") {
			t.Errorf("%s: want Permission denied, got %v\n%s", cmd, err, out)
		}
	}
	if _, ok := e.SrcContent("docs/x"); ok {
		t.Errorf("docs/x arrived outside the scope")
	}
	if got, ok := e.SrcContent("docs/readme"); !ok || got != "docs\n" {
		t.Errorf("docs/readme left the tree: %q %v", got, ok)
	}
	testenv.VerifyClean(t, e.Src)
}

// TestMoveOutWithOpenWriter: a file open for writing that a move takes
// out of the governed tree has what it wrote recorded before its
// removal, and nothing after under the exempt name; moved back in, its
// later writes are recorded again.
func TestMoveOutWithOpenWriter(t *testing.T) {
	testenv.Parallel(t)
	e := mountExempt(t, exemptPolicy)
	script := `mkdir -p build src/h && echo x > src/h/f && exec 3>>src/h/f && echo one >&3 && mv src/h build/h && echo two >&3 && exec 3>&- &&
echo y > src/g && exec 4>>src/g && mv src/g build/g && echo mid >&4 && mv build/g src/g && echo after >&4 && exec 4>&- && sleep 0.2 && rm -rf build/h`
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, script); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	final := testenv.ShaOf([]byte("y\nmid\nafter\n"))
	e.WaitRecord("the write to src/g after it came back", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventWrite && r.Path() == "src/g" && ledger.Str(r.Gov().PostHash) == final
	})
	recs := e.Records()
	for _, r := range recs {
		if strings.HasPrefix(r.Path(), "build/") {
			t.Errorf("a record names the exempt %s: %s; records:\n%s", r.Path(), r.Gov().Event, describeRecords(recs))
		}
	}
	var del *ledger.Record
	for _, r := range recs {
		if r.Gov().Event == ledger.EventDelete && r.Path() == "src/h/f" {
			del = r
		}
	}
	if del == nil || ledger.Str(del.Gov().PreHash) != testenv.ShaOf([]byte("x\none\n")) {
		t.Fatalf("src/h/f's removal does not carry what the handle wrote before the move; records:\n%s", describeRecords(recs))
	}
	testenv.VerifyClean(t, e.Src)
}

// TestExchangeAcrossGovernedEdgeRefused: renameat2(RENAME_EXCHANGE) of a
// governed and an exempt file would move content out of and into the
// governed tree at once; it is refused, and both stay as they were.
func TestExchangeAcrossGovernedEdgeRefused(t *testing.T) {
	testenv.Parallel(t)
	seed := exemptSeed()
	seed["build/x.txt"] = "exempt\n"
	e := testenv.MountPrepared(t, exemptPolicy, "INT-001", seed, func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	var err error
	asAgent(t, func() {
		err = unix.Renameat2(unix.AT_FDCWD, filepath.Join(e.Mnt, "src/c.txt"), unix.AT_FDCWD, filepath.Join(e.Mnt, "build/x.txt"), unix.RENAME_EXCHANGE)
	})
	if err != syscall.EACCES {
		t.Fatalf("exchange of src/c.txt with build/x.txt: %v, want EACCES", err)
	}
	if got, _ := e.SrcContent("src/c.txt"); got != "original\n" {
		t.Errorf("src/c.txt = %q after the refused exchange", got)
	}
	if got, _ := e.SrcContent("build/x.txt"); got != "exempt\n" {
		t.Errorf("build/x.txt = %q after the refused exchange", got)
	}
}

func hasRecord(recs []*ledger.Record, ev ledger.Event, path string) bool {
	for _, r := range recs {
		if r.Gov().Event == ev && r.Path() == path {
			return true
		}
	}
	return false
}

// describeRecords lists records one a line, for failure messages.
func describeRecords(recs []*ledger.Record) string {
	var b strings.Builder
	for _, r := range recs {
		g := r.Gov()
		fmt.Fprintf(&b, "  %s %s from=%s pre=%s post=%s %s\n", g.Event, r.Path(), g.FromPath, ledger.ShortHash(ledger.Str(g.PreHash)),
			ledger.ShortHash(ledger.Str(g.PostHash)), filepath.Base(g.Op))
	}
	return b.String()
}

// TestMoveOutRefusedWhenItsBytesCannotBeKept: a move out of the governed
// tree destroys what it takes along, for the ledger, as an unlink does;
// when the object store cannot keep those bytes (its bound is reached),
// the move is refused like the unlink would be, never made without undo.
func TestMoveOutRefusedWhenItsBytesCannotBeKept(t *testing.T) {
	testenv.Parallel(t)
	src := tmpfsSource(t, "64m") // a bound of about 6.4 MiB
	seed := map[string]string{".orchestration/.intentignore": "build/\n"}
	for i := range 4 {
		seed["src/bulk/big"+strconv.Itoa(i)+".bin"] = bigFile() + strconv.Itoa(i) // 4 × 2 MiB, each its own object
	}
	e := testenv.MountAt(t, src, exemptPolicy, "INT-001", seed, func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "mkdir -p build && mv src/bulk build/bulk"); err == nil {
		t.Fatalf("a move out of 8 MiB past a %d-byte store bound went ahead:\n%s", e.D.Status().Store.MaxBytes, out)
	}
	for i := range 4 {
		rel := "src/bulk/big" + strconv.Itoa(i) + ".bin"
		if got, ok := e.SrcContent(rel); !ok || got != bigFile()+strconv.Itoa(i) {
			t.Errorf("%s after the refused move: present %v, %d bytes", rel, ok, len(got))
		}
	}
	if _, err := os.Lstat(filepath.Join(e.Src, "build", "bulk")); !os.IsNotExist(err) {
		t.Errorf("build/bulk exists after the refused move: %v", err)
	}
	e.WaitRecord("the PREIMAGE_UNAVAILABLE denial of the move", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventDenied && g.Code == "PREIMAGE_UNAVAILABLE"
	})
	testenv.VerifyClean(t, e.Src)
}
