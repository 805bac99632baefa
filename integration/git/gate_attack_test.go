package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// craftElsewhere builds, as the agent, a clone of origin outside the mount
// (the agent may write its own directories) and runs script in it; it
// returns the script's output. Nothing of it is written through the mount.
func craftElsewhere(t *testing.T, e *testenv.Env, origin, name, script string) (dir, out string) {
	t.Helper()
	parent := filepath.Dir(e.Src)
	testenv.GitAs(t, parent, "git clone -q "+origin+" "+name)
	dir = filepath.Join(parent, name)
	return dir, testenv.GitAs(t, dir, script)
}

// TestGateAttackEvilMergeFetchedIsNeverChecked.
//
// Attack: the agent builds, outside the mount, an "evil" merge commit
// whose parents are main and an empty commit on main, and whose tree changes README.md
// (outside INT-001's scope src/**) to content never written through the
// mount. In the mount it fetches that commit from its own directory and
// fast-forwards main to it:
//
//	git fetch -q /path/evil HEAD && git reset -q --soft FETCH_HEAD
//
// The gate does not judge it: its objects came through index-pack /
// unpack-objects (git receiving objects), so it is "from elsewhere", and
// the design relies on `intentfs check` to judge every commit wherever it
// was made. But `intentfs check` walks `git log --no-merges`: a merge
// commit is never looked at, so the evil merge's README.md passes, and the
// human's `intentfs check base..HEAD` says OK (0 commits).
//
// Impact: any out-of-scope content lands on the branch and passes the
// reviewer's/CI gate. Severity: HIGH (complete bypass of both gates with
// stock git commands). Fix: check merges in `intentfs check` as CheckNew
// does (the changes a merge makes that come from none of its parents).
func TestGateAttackEvilMergeFetchedIsNeverChecked(t *testing.T) {
	testenv.Parallel(t)
	c, e, origin, base := testenv.GateRepo(t)
	evil, m := craftElsewhere(t, e, origin, "evil",
		"e=$(git commit-tree -p HEAD -m empty HEAD^{tree}) && echo pwned > README.md && git add README.md && git commit-tree -p HEAD -p $e -m 'merge' $(git write-tree)")
	testenv.GitAs(t, evil, "git update-ref refs/heads/main "+m)

	// In the mount, as the agent: an ordinary fetch and fast-forward.
	out, err := testenv.GitTry(e.Mnt, "git fetch -q "+evil+" main && git reset -q --soft FETCH_HEAD")
	if err != nil {
		testenv.SkipOrFail(t, "the gate refused the fetched evil merge (not this hole): %v\n%s", err, out)
	}
	if got := testenv.GitAs(t, e.Src, "git rev-parse main && git show main:README.md"); !strings.Contains(got, m) || !strings.Contains(got, "pwned") {
		t.Fatalf("main does not hold the evil merge: %s", got)
	}
	chk, code := c.Run("check", "--source", e.Src, base+"..main")
	t.Logf("intentfs check %s..main (exit %d):\n%s", base[:12], code, chk)
	if code == 0 || strings.HasPrefix(chk, "OK") || !strings.Contains(chk, "README.md") {
		t.Errorf("HOLE: main holds a merge whose README.md (outside src/**, never written through the mount) no parent has, and intentfs check says OK:\n%s", chk)
	}
}

// TestGateAttackDefaultRangeFromAgentRemoteRef.
//
// Attack: the agent crafts a plain commit changing README.md (outside
// src/**) outside the mount, fetches it into the mount and fast-forwards
// main to it (not judged by the gate: not made in the mount), then moves
// the remote-tracking ref the default range is computed from:
//
//	git fetch -q /path/evil main && git reset -q --soft FETCH_HEAD
//	git update-ref refs/remotes/origin/main HEAD
//
// refs/remotes/* is not governed at all (any rename onto it passes). The
// human then runs `intentfs check` with the default range (merge-base with
// @{upstream}..HEAD) as the help suggests: the merge-base is HEAD itself,
// the range is empty and check exits 0 with "OK: 0 commit(s)". A `git push`
// then publishes the out-of-scope commit.
//
// Impact: the reviewer's default check is decided by a ref the agent
// writes. Severity: MEDIUM-HIGH (needs the reviewer to rely on the default
// range, which is what the documentation shows first). Fix: make
// refs/remotes/* (and the declared upstream's tracking ref) read-only for
// anything but git receiving from the remote (fetch), or have check take
// the base from something the agent cannot write (e.g. the remote itself,
// or the mount's recorded start tip), and fail rather than say OK on an
// empty default range.
func TestGateAttackDefaultRangeFromAgentRemoteRef(t *testing.T) {
	testenv.Parallel(t)
	c, e, origin, _ := testenv.GateRepo(t)
	evil, x := craftElsewhere(t, e, origin, "evil2",
		"echo pwned > README.md && git commit -qam docs && git rev-parse HEAD")
	out, err := testenv.GitTry(e.Mnt, "git fetch -q "+evil+" main && git reset -q --soft FETCH_HEAD && git update-ref refs/remotes/origin/main HEAD")
	if err != nil {
		testenv.SkipOrFail(t, "refused (not this hole): %v\n%s", err, out)
	}
	if got := testenv.GitAs(t, e.Src, "git rev-parse main"); got != x {
		t.Fatalf("main is %s, not the crafted %s", got, x)
	}
	chk, code := c.Run("check", "--source", e.Src)
	t.Logf("intentfs check (default range, exit %d):\n%s", code, chk)
	if code == 0 {
		t.Errorf("HOLE: main holds %s changing README.md outside src/**, and the default intentfs check exits 0:\n%s", x[:12], chk)
	} else if !strings.Contains(chk, "refs/remotes/origin/main") || !strings.Contains(chk, "intentfs check <base>..HEAD") {
		t.Errorf("the default check refuses, but does not name the agent-writable ref and how to give the range:\n%s", chk)
	}
}

// craftInMount makes, as the agent in the mount, a commit on top of HEAD
// that changes README.md (outside src/**) to content never written
// through the mount, without moving any ref; the index is left clean.
func craftInMount(t *testing.T, mnt string) string {
	t.Helper()
	c := testenv.GitAs(t, mnt, "blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,README.md && git commit-tree -p HEAD -m tidy $(git write-tree)")
	testenv.GitAs(t, mnt, "git reset -q HEAD -- README.md")
	return c
}

// mainHolds reports whether the source's main names commit (the attack's
// write is synchronous: nothing to wait for).
func mainHolds(t *testing.T, src, commit string) bool {
	t.Helper()
	out, _ := testenv.GitTry(src, "cat .git/refs/heads/main 2>/dev/null; git rev-parse -q --verify refs/heads/main")
	return strings.Contains(out, commit)
}

// TestGateAttackRefWrittenThroughFdKeptOpenAcrossRename.
//
// Attack: git's own way to move a branch is judged at the rename of
// main.lock onto main, from the content the lock holds then. The agent
// keeps the lock's file descriptor open, renames it onto the ref with the
// current (unchanged, so accepted) commit id, then writes the crafted
// commit id through the still-open descriptor:
//
//	perl: sysopen main.lock; syswrite HEAD's id; rename main.lock main;
//	      sysseek 0; syswrite <crafted>
//
// The write goes to the inode that is now refs/heads/main; nothing judges
// it (the handle was opened as a .lock, which is not a ref).
//
// Impact: the commit gate is bypassed for any commit made in the mount.
// Severity: HIGH for the gate. Fix: when a rename makes a file a ref,
// refuse further writes through handles opened before (re-check the
// handle's current path on write, or refuse the rename while the source
// file is open for writing).
//
// Closed: the daemon replaces the renamed file with a new one holding
// what was judged, so the kept handle writes to a file that is no longer
// the ref.
func TestGateAttackRefWrittenThroughFdKeptOpenAcrossRename(t *testing.T) {
	testenv.Parallel(t)
	c, e, _, base := testenv.GateRepo(t)
	crafted := craftInMount(t, e.Mnt)
	script := `perl -e 'use Fcntl; my ($old, $new) = @ARGV;
sysopen(my $fh, ".git/refs/heads/main.lock", O_WRONLY|O_CREAT|O_EXCL, 0644) or die "open: $!";
syswrite($fh, "$old\n") or die "write: $!";
rename(".git/refs/heads/main.lock", ".git/refs/heads/main") or die "rename: $!";
sysseek($fh, 0, 0); syswrite($fh, "$new\n") or die "second write: $!"; close($fh) or die "close: $!";' ` + base + " " + crafted
	out, err := testenv.GitTry(e.Mnt, script)
	t.Logf("write through the lock's descriptor after the rename: err %v\n%s", err, out)
	if mainHolds(t, e.Src, crafted) {
		t.Errorf("HOLE: main moved from %s to the unjudged crafted commit %s by writing through the lock's descriptor after the judged rename", base[:12], crafted[:12])
		chk, code := c.Run("check", "--source", e.Src, base+"..main")
		t.Logf("intentfs check %s..main (exit %d):\n%s", base[:12], code, chk)
		if code == 0 || !strings.Contains(chk, "README.md") {
			t.Errorf("HOLE: and intentfs check does not flag it:\n%s", chk)
		}
	}
	// The ref is a file of its own: reading it through the mount gives
	// what was judged, and git still works with it.
	if got := testenv.GitAs(t, e.Mnt, "cat .git/refs/heads/main && git rev-parse main"); got != base+"\n"+base {
		t.Errorf("main read through the mount: %q, want %s twice", got, base)
	}
	testenv.GitAs(t, e.Mnt, "printf 'package api\\n\\nfunc Get() {}\\n' > src/api.go && git add src/api.go && git commit -qm 'the api'")
}

// TestGateAttackCommitGraphHidesTree.
//
// Attack: objects/info/commit-graph is "git state" the agent may write
// through the mount, and git (the gate's and check's git included: the
// hardening does not set core.commitGraph=false) takes a commit's root
// tree from the graph rather than from the commit object. The agent makes
// a commit X changing README.md (outside src/**), writes a commit graph
// holding X, and patches X's row so its tree is the parent's:
//
//	x=$(... git commit-tree -p HEAD ...)        # tree T_bad
//	echo $x | git commit-graph write --stdin-commits
//	perl: replace T_bad's 20 bytes by HEAD^{tree}'s in the graph file
//	git update-ref refs/heads/main $x
//
// The gate's `git log --raw --no-walk X` takes X's tree from the graph,
// sees no change, and main moves to X, whose real tree (git cat-file -p)
// has README.md "pwned". (`intentfs check base..main` walks a range, where
// git 2.39 reads the real tree, so it still flags this non-merge commit;
// an in-mount evil merge, judged by diff-tree against its parents, is
// exposed to the same substitution, and check skips merges: see
// TestGateAttackEvilMergeFetchedIsNeverChecked. Another git version or a
// patched generation/parents row may fool the range walk too.)
//
// Impact: the commit gate is bypassed from inside the mount with stock git
// plus a byte patch of a file the mount lets the agent write. Severity:
// HIGH for the gate. Fix: run every gate/check git
// with -c core.commitGraph=false (and fetch.writeCommitGraph etc. do not
// matter then), or make objects/info/commit-graph* read-only through the
// mount like alternates.
func TestGateAttackCommitGraphHidesTree(t *testing.T) {
	testenv.Parallel(t)
	c, e, _, base := testenv.GateRepo(t)
	x := craftInMount(t, e.Mnt)
	tbad := testenv.GitAs(t, e.Mnt, "git cat-file -p "+x+" | sed -n 's/^tree //p'")
	tgood := testenv.GitAs(t, e.Mnt, "git rev-parse HEAD^{tree}")
	out, err := testenv.GitTry(e.Mnt, "echo "+x+" | git commit-graph write --stdin-commits && ls -l .git/objects/info/ && "+
		`perl -e 'my ($g, $a, $b) = @ARGV; open(my $in, "<:raw", $g) or die $!; local $/; my $d = <$in>; close $in;
my ($A, $B) = (pack("H*", $a), pack("H*", $b)); my $n = ($d =~ s/\Q$A\E/$B/g) or die "tree not in graph";
open(my $o, ">:raw", "$g.new") or die $!; print $o $d; close $o or die $!; rename("$g.new", $g) or die $!; print "patched $n\n"' `+
		".git/objects/info/commit-graph "+tbad+" "+tgood)
	t.Logf("commit graph: err %v\n%s", err, out)
	if err != nil {
		testenv.SkipOrFail(t, "could not write the commit graph (not this hole): %v", err)
	}
	if got := testenv.GitAs(t, e.Mnt, "git log -1 --format=%T "+x); got != tgood {
		testenv.SkipOrFail(t, "git does not take the tree from the patched graph (%s)", got)
	}
	out, err = testenv.GitTry(e.Mnt, "git update-ref refs/heads/main "+x)
	t.Logf("git update-ref refs/heads/main %s: err %v\n%s", x[:12], err, out)
	chk, code := c.Run("check", "--source", e.Src, base+"..main")
	t.Logf("intentfs check %s..main (exit %d):\n%s", base[:12], code, chk)
	if mainHolds(t, e.Src, x) {
		t.Errorf("HOLE: main holds %s, whose real tree %s changes README.md outside src/**: the gate judged the tree the patched commit-graph names", x[:12], tbad[:12])
		if code == 0 {
			t.Errorf("HOLE: intentfs check says OK:\n%s", chk)
		}
	}
	// check reads commits as the gate does: a range naming the crafted
	// commit itself must not pass through the graph either.
	if chk, code := c.Run("check", "--source", e.Src, base+".."+x); code == 0 {
		t.Errorf("HOLE: intentfs check %s..%s says OK:\n%s", base[:12], x[:12], chk)
	}
}

// TestGateAttackPackedRefsDuplicateEntry.
//
// Attack: the gate reads packed-refs into a map (the last line for a name
// wins) and judges only the names whose value changes; git, when the
// header claims "sorted", binary-searches the file as it is and finds the
// first line. The agent writes a packed-refs with main twice, the crafted
// commit first and the current commit last (a new branch line in between
// keeps the binary search on the first), then removes the loose ref,
// which no rule watches:
//
//	# pack-refs with: peeled fully-peeled sorted
//	<crafted> refs/heads/main
//	<HEAD>    refs/heads/zzz
//	<HEAD>    refs/heads/main
//	mv .git/packed-refs.new .git/packed-refs; rm .git/refs/heads/main
//
// The gate sees main unchanged (HEAD) and zzz new at HEAD: nothing to
// judge. git resolves main to the crafted commit (README.md outside
// src/**).
//
// Impact: the commit gate is bypassed for any commit made in the mount.
// Severity: HIGH for the gate. Fix: refuse a packed-refs with a duplicate
// (or unsorted, when it claims sorted) name, or ask git itself
// (`git show-ref` on the new file) rather than parsing; and judge the
// unlink of a loose branch (the packed value it reveals).
func TestGateAttackPackedRefsDuplicateEntry(t *testing.T) {
	testenv.Parallel(t)
	_, e, _, base := testenv.GateRepo(t)
	crafted := craftInMount(t, e.Mnt)
	out, err := testenv.GitTry(e.Mnt, "printf '# pack-refs with: peeled fully-peeled sorted \\n%s refs/heads/main\\n%s refs/heads/zzz\\n%s refs/heads/main\\n' "+
		crafted+" "+base+" "+base+" > .git/packed-refs.new && mv .git/packed-refs.new .git/packed-refs && rm .git/refs/heads/main && git rev-parse main")
	t.Logf("duplicate packed main, loose main removed: err %v\n%s", err, out)
	if mainHolds(t, e.Src, crafted) {
		t.Errorf("HOLE: main resolves to the unjudged crafted commit %s (was %s) through a packed-refs with main twice", crafted[:12], base[:12])
	}
}

// TestGateAttackForgedLocalNoteAccountsForLocalCheck.
//
// Attack: refs/notes/intentfs of the source is written through the mount
// like any ref the gate does not watch, and `intentfs check` on the
// source adds every record of those notes whose id is not in the local
// ledger, unverified, even though the local (root-owned) ledger is there.
// The agent gets a commit changing README.md (outside src/**) onto main
// (fetched from its own directory: not judged by the gate), then attaches
// a note with one made-up "revert" record (judge accepts a revert
// whatever its intent) naming README.md and the committed content's
// sha256:
//
//	git fetch -q /path/evil main && git reset -q --soft FETCH_HEAD
//	git notes --ref=intentfs add -f -m '{"id":"<new uuid>","files":[{"path":"README.md"}],
//	  "metadata":{"dev.intentfs":{"event":"revert","post_hash":"sha256:<sha of pwned>"}}}' HEAD
//
// `intentfs check base..main`, run by the human on the source with the
// local ledger, says OK. (Unlike forged notes read on a fresh clone, a
// documented limit, this needs no other machine: the reviewer's local check is fooled on the agent's own clone.)
//
// Impact: full bypass of the local check. Severity: HIGH. Fix: when a
// local ledger exists, take from the notes only records that are in it
// (or that verify against a chain other than the local origin's), and
// never let a note record of this workspace's origin that the local
// ledger lacks account for anything; make refs/notes/intentfs writable
// only by the daemon in the mount.
func TestGateAttackForgedLocalNoteAccountsForLocalCheck(t *testing.T) {
	testenv.Parallel(t)
	c, e, origin, base := testenv.GateRepo(t)
	evil, x := craftElsewhere(t, e, origin, "evil3", "echo pwned > README.md && git commit -qam docs && git rev-parse HEAD")
	out, err := testenv.GitTry(e.Mnt, "git fetch -q "+evil+" main && git reset -q --soft FETCH_HEAD && "+
		`h=$(printf 'pwned\n' | sha256sum | cut -d' ' -f1) && `+
		`git notes --ref=intentfs add -f -m "{\"id\":\"6a1e2b3c-4d5e-4f60-8172-839405a6b7c8\",\"files\":[{\"path\":\"README.md\"}],\"metadata\":{\"dev.intentfs\":{\"event\":\"revert\",\"post_hash\":\"sha256:$h\"}}}" HEAD`)
	t.Logf("fetch, reset and forged note: err %v\n%s", err, out)
	if !mainHolds(t, e.Src, x) {
		testenv.SkipOrFail(t, "main does not hold the fetched commit (not this hole): %v\n%s", err, out)
	}
	chk, code := c.Run("check", "--source", e.Src, base+"..main")
	t.Logf("intentfs check %s..main (exit %d):\n%s", base[:12], code, chk)
	if code == 0 {
		t.Errorf("HOLE: main's %s changes README.md outside src/** and a forged note written through the mount makes the local intentfs check say OK:\n%s", x[:12], chk)
	}
}

// TestGateAttackRefsHeadsReplacedBySymlink.
//
// Attack: the gate refuses moving a directory onto refs/heads and writing
// a branch in place, but neither moving refs/heads away (only the
// destination of a rename is classified) nor creating a symlink named
// refs/heads (OpSymlink is refused only for branch/HEAD/packed-refs
// paths, and refs/heads is a "refDir"). The agent points refs/heads at a
// directory of its own in scope and writes the branch there as an
// ordinary file:
//
//	mkdir src/.r && cp .git/refs/heads/* src/.r/ && echo <crafted> > src/.r/main
//	mv .git/refs/heads .git/refs/oldheads
//	ln -s ../../src/.r .git/refs/heads
//
// git (the human's in the source too) resolves main through the symlink
// to the crafted commit (README.md outside src/**); later writes of
// src/.r/main move the branch with no gate at all.
//
// Impact: the commit gate is bypassed for any commit made in the mount,
// and the branch becomes an ordinary in-scope file. Severity: HIGH for the
// gate. Fix: refuse symlinks (and renames away, and rmdir) at refs,
// refs/heads and any directory below it, as moving a directory onto them
// is refused; treat the source side of a rename of a ref directory like
// the destination.
func TestGateAttackRefsHeadsReplacedBySymlink(t *testing.T) {
	testenv.Parallel(t)
	_, e, _, base := testenv.GateRepo(t)
	crafted := craftInMount(t, e.Mnt)
	out, err := testenv.GitTry(e.Mnt, "mkdir src/.r && cp .git/refs/heads/* src/.r/ && echo "+crafted+" > src/.r/main && "+
		"mv .git/refs/heads .git/refs/oldheads && ln -s ../../src/.r .git/refs/heads && git rev-parse main")
	t.Logf("refs/heads replaced by a symlink: err %v\n%s", err, out)
	if got, _ := testenv.GitTry(e.Src, "git rev-parse -q --verify refs/heads/main"); got == crafted {
		t.Errorf("HOLE: main resolves to the unjudged crafted commit %s (was %s) through a symlinked refs/heads", crafted[:12], base[:12])
	}
}

// TestGateAttackShadowRefRedirectsCheck.
//
// Attack: git resolves a short name through $GIT_DIR/<name>, refs/<name>,
// refs/tags/<name> before refs/heads/<name>. refs/<name> is not a branch
// to the gate, so the agent may write it. After a legitimate commit G in
// the mount, it puts a commit X changing README.md (outside src/**) on
// top of it onto main (fetched from its own directory: not judged by the
// gate), and shadows the branch name with the clean commit:
//
//	git fetch -q /path/evil main && git reset -q --soft FETCH_HEAD
//	git update-ref refs/main <G>
//
// The human's `intentfs check <base>..main` checks refs/main (G): "OK: 1
// commit(s)"; git's "refname 'main' is ambiguous" warning goes to a stderr
// intentfs swallows. `git push origin main` pushes refs/heads/main (push
// prefers refs/heads/ to the weak match refs/main; checked with git
// 2.39), which holds X.
//
// Impact: the reviewer checks another commit than the branch. Severity:
// MEDIUM (needs the short branch name, which is what people type).
// Fix: resolve each revision of the range with git's ambiguity check
// (rev-parse --verify with core.warnAmbiguousRefs as an error) and fail
// on an ambiguous name, or refuse refs outside refs/heads, refs/tags,
// refs/remotes, refs/notes and refs/stash through the mount.
func TestGateAttackShadowRefRedirectsCheck(t *testing.T) {
	testenv.Parallel(t)
	c, e, _, base := testenv.GateRepo(t)
	testenv.GitAs(t, e.Mnt, "printf 'package api\\n\\nfunc Get() {}\\n' > src/api.go && git add src/api.go && git commit -qm 'the api'")
	g := testenv.GitAs(t, e.Mnt, "git rev-parse HEAD")
	parent := filepath.Dir(e.Src)
	testenv.GitAs(t, parent, "git clone -q "+e.Mnt+" evil4")
	evil := filepath.Join(parent, "evil4")
	x := testenv.GitAs(t, evil, "echo pwned > README.md && git commit -qam docs && git rev-parse HEAD")
	out, err := testenv.GitTry(e.Mnt, "git fetch -q "+evil+" main && git reset -q --soft FETCH_HEAD && git update-ref refs/main "+g)
	t.Logf("fetch, reset and refs/main: err %v\n%s", err, out)
	if !mainHolds(t, e.Src, x) {
		testenv.SkipOrFail(t, "main does not hold the fetched commit (not this hole): %v\n%s", err, out)
	}
	chk, code := c.Run("check", "--source", e.Src, base+"..main")
	t.Logf("intentfs check %s..main (exit %d):\n%s", base[:12], code, chk)
	if code == 0 {
		t.Errorf("HOLE: refs/heads/main holds %s (README.md outside src/**), and intentfs check %s..main says OK: it checked refs/main:\n%s", x[:12], base[:12], chk)
	}
}

// TestGateAttackAgentCodeLaunderedAsRestore.
//
// Attack: a write by git is a "restore", not authorship, when the content
// is in a commit a branch, remote-tracking branch, HEAD or FETCH_HEAD
// names and that was not made in the mount. A commit the agent makes in a
// directory of its own and fetches qualifies. So the agent writes code
// there and brings it into the work tree with git:
//
//	(in ~/evil) printf 'package api\n\nfunc Backdoor() {}\n' > src/evil.go && git commit
//	git fetch -q /path/evil main && git checkout FETCH_HEAD -- src/evil.go
//
// The record then says restored_from "commit <X>" and blame credits the
// lines to nobody: a known limit (README, "What git restores is trusted by
// where it is"), since which commits count as someone else's work needs a
// source the agent cannot write. What the limit must not widen is asserted
// here: content brought that way outside the scope is still refused, and
// the in-scope write's record still names the agent's intent and process,
// so the change is attributable even when blame is not.
func TestGateAttackAgentCodeLaunderedAsRestore(t *testing.T) {
	testenv.Parallel(t)
	_, e, origin, _ := testenv.GateRepo(t)
	evil, _ := craftElsewhere(t, e, origin, "evil5",
		"printf 'package api\\n\\nfunc Backdoor() {}\\n' > src/evil.go && echo pwned > README.md && git add src/evil.go README.md && git commit -qm x")
	testenv.GitAs(t, e.Mnt, "git fetch -q "+evil+" main")

	out, err := testenv.GitTry(e.Mnt, "git checkout FETCH_HEAD -- README.md")
	if err == nil {
		t.Errorf("HOLE: git checkout of the agent's own README.md (outside src/**) through the mount succeeded:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(e.Src, "README.md")); err != nil || string(b) != "# project\n" {
		t.Errorf("HOLE: README.md in the source is %q (%v), want the original", b, err)
	}

	testenv.GitAs(t, e.Mnt, "git checkout FETCH_HEAD -- src/evil.go")
	var rec *ledger.Record
	testenv.WaitFor(t, func() bool {
		for _, r := range e.Records() {
			if r.Path() == "src/evil.go" && r.Gov().PostHash != nil {
				rec = r
				return true
			}
		}
		return false
	}, "the record of src/evil.go")
	g := rec.Gov()
	intent := "<none>"
	if g.IntentID != nil {
		intent = *g.IntentID
	}
	t.Logf("src/evil.go: restored_from %q, intent %s, process %+v", g.RestoredFrom, intent, g.Process)
	if intent != "INT-001" {
		t.Errorf("the record of the laundered src/evil.go names intent %s, not INT-001", intent)
	}
	if g.Process == nil {
		t.Errorf("the record of the laundered src/evil.go names no process")
	}
}
