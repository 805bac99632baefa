package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

const underscorePolicy = `active_intents:
  - id: INT-001
    name: no private files
    status: IN_PROGRESS
    owned_scope: ["a/**/[!_]*"]
`

// TestFenceDirectoryRenameOnNonPrefixGlob: under a scope that is not a
// plain prefix, a move of a directory decided with a probe name would let
// `mv a/b a/c` carry a/b/_secret (out of scope) along. The move must be
// decided on what really is below the directory.
func TestFenceDirectoryRenameOnNonPrefixGlob(t *testing.T) {
	testenv.Parallel(t)
	e := mountFence(t, underscorePolicy, "INT-001", map[string]string{
		"a/b/x.go": "package x\n", "a/b/_secret": "s\n", "a/ok/y.go": "package y\n", "a/ok/sub/z.go": "package z\n"},
		func(src string) {
			for _, d := range []string{"a", "a/b", "a/ok", "a/ok/sub"} {
				if err := os.Chmod(filepath.Join(src, d), 0o777); err != nil {
					t.Fatal(err)
				}
			}
		})
	const uid, gid = 1000, 1000

	out, err := e.ShAs(uid, gid, "mv a/b a/c")
	if err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("mv a/b a/c carrying a/b/_secret: want Permission denied, got err=%v\n%s", err, out)
	}
	if _, ok := e.SrcContent("a/b/_secret"); !ok {
		t.Fatal("a/b/_secret left its place in the source")
	}
	if _, err := os.Stat(filepath.Join(e.Src, "a/c")); !os.IsNotExist(err) {
		t.Fatalf("a/c exists in the source: %v", err)
	}
	r := e.WaitRecord("the denied move", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventDenied && strings.Contains(g.Reason, "a/b/_secret")
	})
	if g := r.Gov(); g.Code != "OUT_OF_SCOPE" {
		t.Errorf("code = %s, want OUT_OF_SCOPE", g.Code)
	}

	// A directory whose every entry is in scope moves, nested ones too.
	if out, err := e.ShAs(uid, gid, "mv a/ok a/moved"); err != nil {
		t.Fatalf("mv a/ok a/moved (all in scope): %v\n%s", err, out)
	}
	if c, ok := e.SrcContent("a/moved/sub/z.go"); !ok || c != "package z\n" {
		t.Fatalf("a/moved/sub/z.go = %q, %v", c, ok)
	}
	e.WaitRecord("the allowed move", testenv.Event(ledger.EventRename, "a/moved"))
}

// TestDeniedRenameNamesBothEnds: a refused move says where the file came
// from, in the ledger and in the recent denials.
func TestDeniedRenameNamesBothEnds(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/moved.go": "package src\n", "docs/.keep": ""})
	e.MustDeny("mv src/moved.go docs/")
	r := e.WaitRecord("the denied move", func(r *ledger.Record) bool { return r.Gov().Event == ledger.EventDenied })
	if r.Path() != "docs/moved.go" || r.Gov().FromPath != "src/moved.go" {
		t.Errorf("denied record: path %q from %q, want docs/moved.go from src/moved.go", r.Path(), r.Gov().FromPath)
	}
	dn := e.D.Denials(nil)
	if last := dn[len(dn)-1]; last.Path != "docs/moved.go" || last.Path2 != "src/moved.go" {
		t.Errorf("recent denial: path %q path2 %q, want the refused destination and the source", last.Path, last.Path2)
	}
}

const raceMovePolicy = `active_intents:
  - id: INT-001
    name: src
    status: IN_PROGRESS
    owned_scope: ["src/**"]
  - id: INT-003
    name: go files anywhere
    status: IN_PROGRESS
    owned_scope: ["**/*.go"]
`

// TestFenceDirectoryMoveRace: the move of a directory under a scope that
// is not a plain prefix is decided on a listing; an entry created in the
// directory through the mount while the listing runs (under another
// intent the agent selects meanwhile) must not move along unchecked.
func TestFenceDirectoryMoveRace(t *testing.T) {
	testenv.Parallel(t)
	e := mountFence(t, raceMovePolicy, "INT-001", map[string]string{"src/.keep": "", "lib/.keep": ""}, func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	const race = `
import os, threading, time
for d in ("a.go", "b.go"):
    os.makedirs("src/big.go/" + d, exist_ok=True)
    for i in range(3000):
        open("src/big.go/%s/f%d.go" % (d, i), "w").close()
def select(i):
    fd = os.open(".intentfs/active", os.O_WRONLY); os.write(fd, i.encode() + b"\n"); os.close(fd)
result = {}
def mover():
    try:
        os.rename("src/big.go", "lib/big.go"); result["move"] = "moved"
    except OSError as e:
        result["move"] = e.strerror
def creator():
    time.sleep(0.004)
    select("INT-001")
    try:
        open("src/big.go/a.go/README.md", "w").close(); result["create"] = "created"
    except OSError as e:
        result["create"] = e.strerror
select("INT-003")
a, b = threading.Thread(target=mover), threading.Thread(target=creator)
a.start(); b.start(); a.join(); b.join()
print(result)
`
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "/usr/bin/python3 "+testenv.WorldReadable(t, "race.py", race))
	if err != nil {
		t.Fatalf("race: %v\n%s", err, out)
	}
	t.Logf("race: %s", strings.TrimSpace(out))
	if _, err := os.Lstat(filepath.Join(e.Src, "lib/big.go/a.go/README.md")); err == nil {
		t.Fatalf("lib/big.go/a.go/README.md exists: a file no intent covers was moved along (%s)", out)
	}
}

// TestFenceHardLinkIntoExempt: a hard link from an exempt name (an
// .intentignore'd directory) to a governed file would let writes through
// the exempt name change it with no intent and no record.
func TestFenceHardLinkIntoExempt(t *testing.T) {
	testenv.Parallel(t)
	e := mountFence(t, testenv.ScopePolicy, "INT-001", map[string]string{".intentignore": "node_modules/\n", "src/a.txt": "governed\n", "node_modules/.keep": ""},
		func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "ln src/a.txt node_modules/a")
	if err == nil || !strings.Contains(out, "Operation not permitted") && !strings.Contains(out, "Permission denied") {
		t.Fatalf("ln src/a.txt node_modules/a: want it refused, got err=%v %s", err, out)
	}
	if _, err := os.Lstat(filepath.Join(e.Src, "node_modules/a")); err == nil {
		t.Fatal("the exempt link exists in the source")
	}
	e.WaitRecord("the denied link", func(r *ledger.Record) bool {
		return r.Gov().Event == ledger.EventDenied && strings.Contains(r.Gov().Reason, "hard link between node_modules/a")
	})
}
