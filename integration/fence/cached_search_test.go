package fence

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/integration/testenv"
)

// TestCachedPathRepeatedSearchSendsNoRequest: on the cached data path a
// search the agent repeats is answered from the kernel's caches. The first
// search reads every file (one READ each); the kernel then marks each
// file's atime stale, so the next search's fstat of each file is one
// GETATTR, and no READ, LOOKUP or listing; from then on a search sends no
// request for the files at all. A change made in the source still shows
// to the next search, which rereads that file alone.
func TestCachedPathRepeatedSearchSendsNoRequest(t *testing.T) {
	// Serial: counts the requests a repeated search sends, none only while the kernel keeps the mount's caches, which another test's drop_caches or memory pressure evicts.
	testenv.Serial(t)
	const dirs, perDir = 4, 15
	seed := map[string]string{}
	for d := range dirs {
		for f := range perDir {
			seed[fmt.Sprintf("src/d%d/f%d.go", d, f)] = fmt.Sprintf("package d%d\n\nfunc New%d() {}\n", d, f)
		}
	}
	const files = dirs * perDir
	e := mountCached(t, "INT-001", seed)
	const search = "grep -rnI 'func New' src | wc -l"
	grep := func() map[string]uint64 {
		t.Helper()
		before := e.D.Status().Ops
		if out := strings.TrimSpace(cachedAgent(e, search)); out != fmt.Sprint(files) {
			t.Fatalf("%s: %q, want %d matches", search, out, files)
		}
		return opsSince(e.D.Status().Ops, before)
	}

	if cold := grep(); cold["READ"] < files {
		t.Fatalf("the first search read %d files through the daemon, want %d: %v", cold["READ"], files, cold)
	}
	warm := grep()
	for _, op := range []string{"READ", "OPEN", "LOOKUP", "READDIRPLUS", "READDIR", "OPENDIR"} {
		if warm[op] != 0 {
			t.Fatalf("the second search sent %s: %v", op, warm)
		}
	}
	// One per file and directory (src, its dirs), plus the mount point's
	// own attributes, which the kernel keeps for a second only.
	if max := uint64(files + dirs + 2); warm["GETATTR"] > max {
		t.Fatalf("the second search sent %d GETATTR, want at most %d (one per file for its stale atime): %v", warm["GETATTR"], max, warm)
	}
	// The third sends at most the mount point's GETATTR and, with it, the
	// GETXATTR of its ACL (its attributes expire after a second, and the
	// shell's cd walks through it); STATFS and LSEEK (SEEK_HOLE) are grep's
	// own questions, which the kernel never caches.
	again := grep()
	if n := requestsBesides(again, "STATFS", "LSEEK"); n > 2 {
		t.Fatalf("a repeated search sent %d requests, want none for its files: %v", n, again)
	}

	testenv.WriteFile(t, filepath.Join(e.Src, "src/d1/f3.go"), "package d1\n\nfunc Newer() {}\n")
	testenv.WaitFor(t, func() bool {
		out, _ := e.ShAs(testenv.AgentUID, testenv.AgentGID, "grep -rn 'func Newer' src")
		return strings.Contains(out, "src/d1/f3.go:3:func Newer() {}")
	}, "a search through the mount sees the change made in the source")
	// The change dropped the file's attributes, and with them its cached
	// ACL (a GETXATTR at the next permission check).
	changed := grep()
	if changed["READ"] > 1 || changed["GETATTR"] > 3 || changed["GETXATTR"] > 2 ||
		requestsBesides(changed, "STATFS", "LSEEK", "READ", "GETATTR", "GETXATTR") > 0 {
		t.Fatalf("a search after one file changed in the source sent more than that file's requests: %v", changed)
	}
}

// opsSince returns the requests counted in after and not in before.
func opsSince(after, before map[string]uint64) map[string]uint64 {
	d := map[string]uint64{}
	for op, n := range after {
		if n > before[op] {
			d[op] = n - before[op]
		}
	}
	return d
}

// requestsBesides sums ops, leaving out the opcodes named.
func requestsBesides(ops map[string]uint64, except ...string) uint64 {
	var n uint64
	for op, c := range ops {
		if !slices.Contains(except, op) {
			n += c
		}
	}
	return n
}
