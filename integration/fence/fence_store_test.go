package fence

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// storeAttack opens big.bin for writing, changes 8 bytes and closes it,
// rounds times: every round is a new version whose pre-image the daemon
// must keep. It prints "ok" or the error per round.
const storeAttack = `
import os, sys, time
for i in range(int(sys.argv[1])):
    try:
        fd = os.open("src/big.bin", os.O_RDWR)
        os.pwrite(fd, b"%08d" % i, i * 8)
        os.close(fd)
        print("ok", flush=True)
        time.sleep(float(sys.argv[2]))
    except OSError as e:
        print("refused", e.errno, e.strerror, flush=True)
`

// bigFile is the agent's large file: 2 MiB of bytes that compress badly
// nowhere (the store copies, it does not compress).
func bigFile() string { return strings.Repeat("0123456789abcdef", 2<<20/16) }

// TestFenceStoreBounded: an agent that rewrites a large file in a loop
// makes the root daemon keep a full pre-image per version. The store
// stops at its bound (10% of a small filesystem, on ext4 with reserved
// blocks and on tmpfs); the next change is refused with
// PREIMAGE_UNAVAILABLE rather than allowed without undo, and the ledger
// verifies.
func TestFenceStoreBounded(t *testing.T) {
	testenv.Parallel(t)
	for _, fs := range []string{"ext4", "tmpfs"} {
		t.Run(fs, func(t *testing.T) {
			t.Parallel()
			var src string
			if fs == "ext4" {
				src = ext4Source(t)
			} else {
				src = tmpfsSource(t, "64m")
			}
			e := testenv.MountAt(t, src, testenv.ScopePolicy, "INT-001", map[string]string{"src/big.bin": bigFile()}, func(src string) { testenv.ChownTree(t, src) })
			e.ReachableByAgent()
			bound := e.D.Status().Store.MaxBytes
			if bound <= 0 || bound > 7<<20 {
				t.Fatalf("store bound on a 64 MiB %s = %d, want 10%% of it", fs, bound)
			}
			// On the cached data path one process's rewrites are one change
			// until its writes pause: pause, so each round is a version.
			pause := "0"
			if testenv.TestDataPath() == "cached" {
				pause = "0.4"
			}
			out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "/usr/bin/python3 "+testenv.WorldReadable(t, "store.py", storeAttack)+" 15 "+pause)
			if err != nil {
				t.Fatalf("attack: %v\n%s", err, out)
			}
			t.Logf("15 rounds:\n%s", out)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			first := -1
			for i, l := range lines {
				if strings.HasPrefix(l, "refused") && first < 0 {
					first = i
				}
				if first >= 0 && !strings.HasPrefix(l, "refused "+strconv.Itoa(int(syscall.ENOSPC))) {
					t.Errorf("round %d after the store was full: %q, want refused with ENOSPC", i, l)
				}
			}
			if first < 0 {
				t.Fatalf("15 versions of a 2 MiB file were all kept, past a %d-byte bound", bound)
			}
			use := e.D.Status().Store
			if use.CopiedBytes > bound || use.Bytes > bound {
				t.Errorf("store holds %d bytes (%d copied), over its %d-byte bound", use.Bytes, use.CopiedBytes, bound)
			}
			if use.CopiedByUID[testenv.AgentUID] == 0 {
				t.Errorf("the copies are not counted against uid %d: %+v", testenv.AgentUID, use.CopiedByUID)
			}
			e.WaitRecord("the PREIMAGE_UNAVAILABLE denial", func(r *ledger.Record) bool {
				g := r.Gov()
				return g.Event == ledger.EventDenied && r.Path() == "src/big.bin" && g.Code == "PREIMAGE_UNAVAILABLE" &&
					strings.Contains(g.Reason, "intentfs gc") && strings.Contains(g.Reason, "bound")
			})
			assertNoChangeWithoutUndo(t, e)
			if err := e.D.FlushLedger(); err != nil {
				t.Fatal(err)
			}
			testenv.VerifyClean(t, e.Src)
		})
	}
}

// TestFenceStoreSparesReservedBlocks: with the agent's share of an ext4
// filesystem used up (statfs f_bavail 0), the root daemon must not copy a
// pre-image into the blocks reserved for root: the change is refused.
func TestFenceStoreSparesReservedBlocks(t *testing.T) {
	testenv.Parallel(t)
	e := mountFence(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/big.bin": bigFile(), ".intentignore": "build/\n", "build/.keep": ""},
		func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	// The agent fills the filesystem directly (not through the mount),
	// in an exempt directory: only root's reserve is left.
	fill := exec.Command("setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "dd", "if=/dev/zero", "of="+filepath.Join(e.Src, "build", "fill"), "bs=64k")
	if out, err := fill.CombinedOutput(); err == nil || !strings.Contains(string(out), "No space left") {
		t.Fatalf("dd as uid 1000 did not fill the filesystem: %v %s", err, out)
	}
	var before syscall.Statfs_t
	if err := syscall.Statfs(e.Src, &before); err != nil {
		t.Fatal(err)
	}
	if int64(before.Bavail)*before.Bsize >= 1<<20 || before.Bfree <= before.Bavail {
		t.Fatalf("after the fill: f_bavail %d f_bfree %d (blocks of %d), want less than 1 MiB for users and root's reserve", before.Bavail, before.Bfree, before.Bsize)
	}
	out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "/usr/bin/python3 "+testenv.WorldReadable(t, "store.py", storeAttack)+" 1")
	if err != nil {
		t.Fatalf("attack: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "refused "+strconv.Itoa(int(syscall.ENOSPC))) {
		t.Errorf("a change whose pre-image only root's reserved blocks could hold: %q, want refused with ENOSPC", out)
	}
	var after syscall.Statfs_t
	if err := syscall.Statfs(e.Src, &after); err != nil {
		t.Fatal(err)
	}
	// The denial's record is written as root: a few blocks, not the
	// 2 MiB a copy would take.
	if used := int64(before.Bfree-after.Bfree) * before.Bsize; used >= 1<<20 {
		t.Errorf("root's reserved blocks shrank by %d bytes: the daemon wrote a pre-image into them", used)
	}
	e.WaitRecord("the PREIMAGE_UNAVAILABLE denial", func(r *ledger.Record) bool {
		g := r.Gov()
		return g.Event == ledger.EventDenied && g.Code == "PREIMAGE_UNAVAILABLE" && strings.Contains(g.Reason, "reserved")
	})
	assertNoChangeWithoutUndo(t, e)
	if got, _ := e.SrcContent("src/big.bin"); got != bigFile() {
		t.Error("src/big.bin changed although its change was refused")
	}
	if err := os.Remove(filepath.Join(e.Src, "build", "fill")); err != nil {
		t.Fatal(err)
	}
	if err := e.D.FlushLedger(); err != nil {
		t.Fatal(err)
	}
	testenv.VerifyClean(t, e.Src)
}

// assertNoChangeWithoutUndo fails if any recorded change says its
// pre-image failed to be kept: such a change was allowed without undo.
func assertNoChangeWithoutUndo(t *testing.T, e *testenv.Env) {
	t.Helper()
	for _, r := range e.Records() {
		if g := r.Gov(); strings.HasPrefix(g.PreImage, "failed") {
			t.Errorf("%s %s was allowed without undo: pre_image %q", g.Event, r.Path(), g.PreImage)
		}
	}
}

// tmpfsSource returns an empty tmpfs of size, mounted for this test and
// unmounted (after the FUSE mount above it) in t.Cleanup.
func tmpfsSource(t *testing.T, size string) string {
	t.Helper()
	testenv.RequireFUSE(t)
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0755"); err != nil {
		testenv.SkipOrFail(t, "mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}
