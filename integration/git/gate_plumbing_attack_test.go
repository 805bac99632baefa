package git

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGateAttack2HardLinkOfBranchWrittenInPlace.
//
// Attack: the gate refuses writing a branch in place, and refuses a hard
// link whose new name is a ref, but not a hard link whose existing file
// is a ref: the new name (a tag, or any file the agent may write) is a
// second name for the branch's inode. Writing through it moves the branch,
// and nothing judges it:
//
//	ln .git/refs/heads/main .git/refs/tags/m
//	echo <crafted> > .git/refs/tags/m
//
// HEAD (ln .git/HEAD .git/refs/tags/h; echo <crafted> > …/h detaches HEAD
// at the crafted commit) and packed-refs (any content: duplicates, out of
// order, which then makes every judged loose-branch removal fail) are
// linked and written the same way.
//
// Impact: the commit gate is bypassed for any commit made in the mount.
// Severity: HIGH for the gate (intentfs check on the range still flags
// the commit). Fix: refuse OpLink whose existing file (Path2) is a ref
// (classifyRef of in2 != notRef), as a symlink or write in place is
// (and refuse a rename onto a ref of a file with more than one link).
func TestGateAttack2HardLinkOfBranchWrittenInPlace(t *testing.T) {
	testenv.Parallel(t)
	_, e, _, base := testenv.GateRepo(t)
	crafted := craftInMount(t, e.Mnt)
	out, err := testenv.GitTry(e.Mnt, "ln .git/refs/heads/main .git/refs/tags/m && echo "+crafted+" > .git/refs/tags/m && git rev-parse main")
	t.Logf("hard link of main written: err %v\n%s", err, out)
	if mainHolds(t, e.Src, crafted) {
		t.Errorf("HOLE: main moved from %s to the unjudged crafted commit %s through a hard link of the branch file", base[:12], crafted[:12])
	}
}

// TestGateAttack2FullHashBaseShadowedByBranch.
//
// Attack: check refuses an ambiguous revision name, and git warns that a
// full 40-hex id is "ambiguous" as soon as a ref of that name exists, even
// though git then takes the object. The agent gets a commit X changing
// README.md (outside src/**) onto main (fetched from its own directory:
// not judged by the gate), and creates a branch named after the base
// commit id the human will review from, pointing at X (also not judged:
// X was not made in the mount):
//
//	git fetch -q /path/evil main && git reset -q --soft FETCH_HEAD
//	git update-ref refs/heads/<base id> HEAD
//
// The human's `intentfs check <base id>..main` (the form the help shows)
// is refused: "<base id> is ambiguous: refs/heads/<base id>; name it in
// full (refs/heads/<base id>)". Doing what it says, `intentfs check
// refs/heads/<base id>..main`, checks X..X: "OK: 0 commit(s)", exit 0.
// Without following the advice the human cannot name any commit id the
// agent has shadowed (<id>^{commit}, <id>~0 warn the same): a DoS on the
// range form.
//
// Impact: the reviewer's check is steered by its own advice to a base
// the agent set; or check on explicit ids is denied. Severity: MEDIUM.
// Fix: a full 40-hex name is an object id whatever refs exist (git uses
// the object): do not count git's warning for it as ambiguity; never
// advise a name under refs/heads that is itself a commit id (or refuse
// such ref names through the mount).
func TestGateAttack2FullHashBaseShadowedByBranch(t *testing.T) {
	testenv.Parallel(t)
	c, e, origin, base := testenv.GateRepo(t)
	evil, x := craftElsewhere(t, e, origin, "evil21", "echo pwned > README.md && git commit -qam docs && git rev-parse HEAD")
	out, err := testenv.GitTry(e.Mnt, "git fetch -q "+evil+" main && git reset -q --soft FETCH_HEAD && git update-ref refs/heads/"+base+" HEAD")
	t.Logf("fetch, reset and refs/heads/<base id>: err %v\n%s", err, out)
	if !mainHolds(t, e.Src, x) {
		testenv.SkipOrFail(t, "main does not hold the fetched commit (not this hole): %v\n%s", err, out)
	}
	chk, code := c.Run("check", "--source", e.Src, base+"..main")
	t.Logf("intentfs check <base id>..main (exit %d):\n%s", code, chk)
	if code == 0 {
		t.Fatalf("HOLE: intentfs check %s..main says OK with README.md changed outside src/**:\n%s", base[:12], chk)
	}
	if !strings.Contains(chk, "README.md") {
		t.Errorf("HOLE (DoS): intentfs check with the full base commit id is refused because the agent made a branch of that name:\n%s", chk)
	}
	if strings.Contains(chk, "name it in full (refs/heads/"+base+")") {
		chk2, code2 := c.Run("check", "--source", e.Src, "refs/heads/"+base+"..main")
		t.Logf("following the advice: intentfs check refs/heads/<base id>..main (exit %d):\n%s", code2, chk2)
		if code2 == 0 {
			t.Errorf("HOLE: check's own advice for the refused base names the agent's branch, and the check then says OK while main holds %s (README.md outside src/**):\n%s", x[:12], chk2)
		}
	}
}

// TestGateAttack2GcMakesUpstreamCommitsTheAgents.
//
// Attack (denial of service, by ordinary git): the gate takes every
// commit in a pack written in the mount by anything but git receiving
// objects (index-pack, unpack-objects) as made in the mount. `git gc`
// (which git also runs by itself: gc --auto after commit, fetch, merge)
// repacks everything with pack-objects, so the commits a fetch brought
// from the remote, until then "from elsewhere", now count as made in the
// mount and are judged against the agent's ledger. A person pushes a
// README change to origin; in the mount:
//
//	git fetch -q origin && git gc -q && git branch -q --no-track review origin/main
//
// Making a branch of the person's commit is refused (COMMIT_NOT_ACCOUNTED,
// README.md never written through the mount; without the gc it passes),
// and so is every later branch, merge, rebase or pull that brings that
// upstream commit, until the mount restarts. The same happens at once, without gc, after the agent writes
// any unreadable objects/pack/x.idx ("a pack that cannot be read: any new
// commit may be in it").
//
// Impact: the agent (or anyone committing through the mount) can no
// longer take in the team's upstream work after a routine gc.
// Severity: MEDIUM (DoS, fail-closed). Fix: judge by what git received
// as well: note the commits that arrived from a receiver (index-pack's
// pack contents, or the remote-tracking tips after a fetch) as known, so
// a repack does not turn them into the mount's work; and treat an
// unreadable pack that git itself would not load (no .pack) as nothing.
func TestGateAttack2GcMakesUpstreamCommitsTheAgents(t *testing.T) {
	testenv.Parallel(t)
	_, e, origin, _ := testenv.GateRepo(t)
	// The gate starts noting the repository's history.
	testenv.GitAs(t, e.Mnt, "printf 'package api\\n\\nfunc Get() {}\\n' > src/api.go && git add src/api.go && git commit -qm 'the api' && git push -q origin main")
	// A person's commit on the upstream.
	parent := filepath.Dir(e.Src)
	testenv.GitAs(t, parent, "git clone -q "+origin+" person && cd person && echo 'by a person' >> README.md && git commit -qam docs && git push -q origin main")
	out, err := testenv.GitTry(e.Mnt, "git fetch -q origin && git gc -q && git branch -q --no-track review origin/main")
	t.Logf("fetch, gc, a branch at the person's commit: err %v\n%s", err, out)
	if err != nil {
		den, _ := os.ReadFile(filepath.Join(e.Mnt, ".intentfs", "denials"))
		t.Errorf("HOLE (DoS): after git gc, a branch at a commit fetched from origin is refused: %v\n%s\n.intentfs/denials:\n%s", err, out, den)
	}
}

// TestGateAttack2UnpackObjectsLaundersInMountCommit.
//
// Attack: objects written by git "receiving" (the real git running
// index-pack or unpack-objects) are taken as fetched from elsewhere and
// their commits are not judged. The agent builds its crafted commit in
// an object directory under src/ (ordinary in-scope files, not objects
// of .git), packs it to a pipe and has the real git unpack it into
// .git/objects, then moves the branch; no fetch, no directory outside the
// mount (works in a sealed session):
//
//	export GIT_OBJECT_DIRECTORY=$PWD/src/.o GIT_ALTERNATE_OBJECT_DIRECTORIES=$PWD/.git/objects GIT_INDEX_FILE=$PWD/src/.ix
//	git read-tree HEAD; ...; x=$(git commit-tree -p HEAD -m tidy $(git write-tree))
//	git rev-list --objects $x ^HEAD | git pack-objects -q --stdout > src/.p
//	unset ...; git unpack-objects -q < src/.p; git update-ref refs/heads/main $x
//
// Impact: the commit gate is bypassed for a commit made entirely in the
// mount (intentfs check on the range still flags it). Severity:
// LOW-MEDIUM (the gate already lets in what a fetch brings; this needs no
// fetch and no place outside the mount). Fix: count a receiver as such
// only when it runs under a fetch/clone/pull (its parent is git fetch
// receiving from a remote), not when the agent runs it directly.
//
// Left to check: requiring a fetch as unpack-objects' parent would only
// add a step (a bare repository in the session's /tmp, a push to it and a
// fetch back bring the same objects in as received), as with any commit
// fetched from elsewhere. The test holds intentfs check to catching it.
func TestGateAttack2UnpackObjectsLaundersInMountCommit(t *testing.T) {
	testenv.Parallel(t)
	c, e, _, base := testenv.GateRepo(t)
	x := testenv.GitAs(t, e.Mnt, `mkdir src/.o && export GIT_OBJECT_DIRECTORY=$PWD/src/.o GIT_ALTERNATE_OBJECT_DIRECTORIES=$PWD/.git/objects GIT_INDEX_FILE=$PWD/src/.ix && `+
		`git read-tree HEAD && blob=$(echo pwned | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$blob,README.md && `+
		`x=$(git commit-tree -p HEAD -m tidy $(git write-tree)) && git rev-list --objects $x ^HEAD | git pack-objects -q --stdout > src/.p && echo $x`)
	out, err := testenv.GitTry(e.Mnt, "git unpack-objects -q < src/.p && rm -rf src/.o src/.ix src/.p && git update-ref refs/heads/main "+x)
	t.Logf("unpack-objects of the crafted commit, then update-ref: err %v\n%s", err, out)
	if !mainHolds(t, e.Src, x) {
		return
	}
	t.Logf("main moved from %s to the unjudged commit %s, unpacked by git unpack-objects", base[:12], x[:12])
	if chk, code := c.Run("check", "--source", e.Src, base+"..refs/heads/main"); code == 0 || !strings.Contains(chk, "README.md") {
		t.Errorf("HOLE: main holds %s (README.md outside src/**) and intentfs check does not flag it:\n%s", x[:12], chk)
	}
}

// TestGateAttack2BrokenNotesRefFailsEveryCheck.
//
// Attack (denial of service): refs/notes/intentfs is agent-writable, and
// `intentfs check` on a clone with a ledger of its own still lists the
// notes (to match them with the ledger's lines) and fails when git cannot.
// The agent points the notes ref at a commit whose tree names a missing
// fan-out subtree:
//
//	t=$(printf '040000 tree 1111…\tab\n' | git mktree --missing)
//	git update-ref refs/notes/intentfs $(git commit-tree -m n $t)
//
// From then on the human's `intentfs check <base>..main` on the source
// fails ("listing notes: … unable to read tree 1111…"), for a range that
// checked clean before, until someone finds and deletes the ref (the
// error does not say to).
//
// Impact: the reviewer/CI gate cannot be run on the agent's clone.
// Severity: LOW-MEDIUM (fail-closed DoS, easy to undo once understood).
// Fix: where a local ledger exists and --with-notes is not given, do not
// read the notes at all (they cannot add anything); otherwise treat an
// unreadable notes tree as no notes plus a notice, as unreadable blobs are.
func TestGateAttack2BrokenNotesRefFailsEveryCheck(t *testing.T) {
	testenv.Parallel(t)
	c, e, _, base := testenv.GateRepo(t)
	testenv.GitAs(t, e.Mnt, "printf 'package api\\n\\nfunc Get() {}\\n' > src/api.go && git add src/api.go && git commit -qm 'the api'")
	if chk, code := c.Run("check", "--source", e.Src, base+"..refs/heads/main"); code != 0 {
		t.Fatalf("the clean range does not check clean before the attack (exit %d):\n%s", code, chk)
	}
	out, err := testenv.GitTry(e.Mnt, "t=$(printf '040000 tree 1111111111111111111111111111111111111111\\tab\\n' | git mktree --missing) && git update-ref refs/notes/intentfs $(git commit-tree -m n $t)")
	t.Logf("notes ref at a tree with a missing subtree: err %v\n%s", err, out)
	chk, code := c.Run("check", "--source", e.Src, base+"..refs/heads/main")
	t.Logf("intentfs check afterwards (exit %d):\n%s", code, chk)
	if code != 0 {
		t.Errorf("HOLE (DoS): a broken refs/notes/intentfs written through the mount makes the human's check of a clean range fail:\n%s", chk)
	}
}

// TestGateAttack2SymlinkTargetNeverWritten.
//
// Attack: a committed symlink is accounted for by any record of a
// symlink created at that path (the record does not carry the target):
// its target, the symlink's whole content, is not compared. The agent
// creates and commits an innocuous symlink through the mount, then, with
// plumbing, commits the same path pointing somewhere it never wrote:
//
//	ln -s util.go src/l && git add src/l && git commit -qm l
//	blob=$(printf '../../../../etc/passwd' | git hash-object -w --stdin)
//	git update-index --cacheinfo 120000,$blob,src/l && git commit -qm retarget
//
// Both the gate and `intentfs check base..main` accept it.
//
// Impact: content (a link target, which decides what the file reads as,
// e.g. a path outside the project or a secret's) never written through the
// mount passes both gates. Severity: LOW (in scope, link only). Fix:
// record the target's hash (sha256 of the readlink bytes) in a symlink's
// record and compare it with the committed blob, as for files.
func TestGateAttack2SymlinkTargetNeverWritten(t *testing.T) {
	testenv.Parallel(t)
	c, e, _, base := testenv.GateRepo(t)
	testenv.GitAs(t, e.Mnt, "ln -s util.go src/l && git add src/l && git commit -qm l")
	out, err := testenv.GitTry(e.Mnt, "blob=$(printf '../../../../etc/passwd' | git hash-object -w --stdin) && git update-index --cacheinfo 120000,$blob,src/l && git commit -qm retarget && git show HEAD:src/l")
	t.Logf("symlink retargeted by plumbing and committed: err %v\n%s", err, out)
	if got, _ := testenv.GitTry(e.Src, "git show refs/heads/main:src/l"); got == "../../../../etc/passwd" {
		t.Errorf("HOLE: the gate let main hold src/l -> %s, a target never written through the mount", got)
		if chk, code := c.Run("check", "--source", e.Src, base+"..refs/heads/main"); code == 0 {
			t.Errorf("HOLE: and intentfs check says OK:\n%s", chk)
		}
	}
}

// TestGateAttack2ForgedReflogSteersCheckOfBranchAtZero.
//
// Attack: logs/ is git state the agent writes through the mount, and git
// resolves <branch>@{0} (and @{N}, @{date}) from the branch's reflog, not
// from the branch. The agent gets a commit X changing README.md (outside
// src/**) onto main (fetched from its own directory: not judged by the
// gate), then appends to logs/refs/heads/main an entry whose new value is
// the clean commit G it made before:
//
//	git fetch -q /path/evil main && git reset -q --soft FETCH_HEAD
//	printf '%s %s a <a@a> 1900000000 +0000\tx\n' X G >> .git/logs/refs/heads/main
//
// `intentfs check <base>..main@{0}` checks G: OK; refs/heads/main is X.
// No ambiguity is involved, so the ambiguity refusal does not apply.
//
// Impact: a reviewer naming the branch through its reflog checks what the
// agent wrote there. Severity: LOW (main@{0} is an unusual way to name
// the tip). Fix: refuse reflog syntax (@{…} other than @{upstream}/@{u}
// and @{push}) in check's revisions, or resolve each to its commit with
// reflogs disabled and say so.
func TestGateAttack2ForgedReflogSteersCheckOfBranchAtZero(t *testing.T) {
	testenv.Parallel(t)
	c, e, _, base := testenv.GateRepo(t)
	testenv.GitAs(t, e.Mnt, "printf 'package api\\n\\nfunc Get() {}\\n' > src/api.go && git add src/api.go && git commit -qm 'the api'")
	g := testenv.GitAs(t, e.Mnt, "git rev-parse HEAD")
	parent := filepath.Dir(e.Src)
	testenv.GitAs(t, parent, "git clone -q "+e.Mnt+" evil22")
	evil := filepath.Join(parent, "evil22")
	x := testenv.GitAs(t, evil, "echo pwned > README.md && git commit -qam docs && git rev-parse HEAD")
	out, err := testenv.GitTry(e.Mnt, "git fetch -q "+evil+" main && git reset -q --soft FETCH_HEAD && "+
		"printf '%s %s a <a@a> 1900000000 +0000\\tx\\n' "+x+" "+g+" >> .git/logs/refs/heads/main && git rev-parse main main@{0}")
	t.Logf("fetch, reset, forged reflog entry: err %v\n%s", err, out)
	if !mainHolds(t, e.Src, x) {
		testenv.SkipOrFail(t, "main does not hold the fetched commit (not this hole): %v\n%s", err, out)
	}
	chk, code := c.Run("check", "--source", e.Src, base+"..main@{0}")
	t.Logf("intentfs check <base>..main@{0} (exit %d):\n%s", code, chk)
	if code == 0 {
		t.Errorf("HOLE: refs/heads/main holds %s (README.md outside src/**), and intentfs check %s..main@{0} says OK: it checked the forged reflog's %s:\n%s", x[:12], base[:12], g[:12], chk)
	}
}

// TestGateAttack2FullRefNameRefusedAndAdviceNamesAgentsBranch.
//
// Attack: the same as TestGateAttack2FullHashBaseShadowedByBranch on the
// tip: git's dwim rules also try refs/heads/<name> for a name that is
// already a full ref, so a branch literally named "refs/heads/main"
// (refs/heads/refs/heads/main, any branch name the agent likes) makes
// `intentfs check <base>..refs/heads/main` -- the form check itself asks
// for -- ambiguous. The agent fast-forwards main to a fetched commit X
// (README.md outside src/**; not judged by the gate) and creates that
// branch at the base:
//
//	git fetch -q /path/evil main && git reset -q --soft FETCH_HEAD
//	git update-ref refs/heads/refs/heads/main <base>
//
// check refuses the fully qualified branch: "refs/heads/main is ambiguous:
// refs/heads/main and refs/heads/refs/heads/main; name it in full
// (refs/heads/refs/heads/main)", and the human cannot name main at all
// (heads/main and main can be shadowed the same way). Following the
// advice checks the agent's branch: "OK: 0 commit(s)", exit 0.
//
// Impact: DoS of check on the branch by any name; the advice steers the
// reviewer to an agent ref that passes. Severity: MEDIUM. Fix: a name
// starting with refs/ is exact (resolve it with rev-parse
// --symbolic-full-name / for-each-ref and do not apply dwim rules), and
// the advice should name the ref that git push would publish
// (refs/heads/<name> only when <name> does not start with refs/).
func TestGateAttack2FullRefNameRefusedAndAdviceNamesAgentsBranch(t *testing.T) {
	testenv.Parallel(t)
	c, e, origin, base := testenv.GateRepo(t)
	evil, x := craftElsewhere(t, e, origin, "evil24", "echo pwned > README.md && git commit -qam docs && git rev-parse HEAD")
	out, err := testenv.GitTry(e.Mnt, "git fetch -q "+evil+" main && git reset -q --soft FETCH_HEAD && git update-ref refs/heads/refs/heads/main "+base)
	t.Logf("fetch, reset and refs/heads/refs/heads/main: err %v\n%s", err, out)
	if !mainHolds(t, e.Src, x) {
		testenv.SkipOrFail(t, "main does not hold the fetched commit (not this hole): %v\n%s", err, out)
	}
	chk, code := c.Run("check", "--source", e.Src, base+"..refs/heads/main")
	t.Logf("intentfs check <base>..refs/heads/main (exit %d):\n%s", code, chk)
	if code == 0 {
		t.Fatalf("HOLE: intentfs check %s..refs/heads/main says OK with README.md changed outside src/**:\n%s", base[:12], chk)
	}
	if !strings.Contains(chk, "README.md") {
		t.Errorf("HOLE (DoS): intentfs check of the fully qualified refs/heads/main is refused because the agent made a branch named refs/heads/main:\n%s", chk)
	}
	if strings.Contains(chk, "name it in full (refs/heads/refs/heads/main)") {
		chk2, code2 := c.Run("check", "--source", e.Src, base+"..refs/heads/refs/heads/main")
		t.Logf("following the advice (exit %d):\n%s", code2, chk2)
		if code2 == 0 {
			t.Errorf("HOLE: check's advice names the agent's branch refs/heads/refs/heads/main, and the check then says OK while main holds %s (README.md outside src/**):\n%s", x[:12], chk2)
		}
	}
}

// TestGateAttack2FetchOfOwnCommitIsNotUpstream: what git fetch from a
// configured remote writes into remote-tracking refs joins the history
// the gate knows (so a git gc does not make upstream commits the
// mount's). git fetch also writes a commit id it already has without
// asking the remote; a commit crafted in the mount and "fetched" that way
// must stay the mount's, and moving main to it is still judged.
func TestGateAttack2FetchOfOwnCommitIsNotUpstream(t *testing.T) {
	testenv.Parallel(t)
	_, e, _, base := testenv.GateRepo(t)
	x := craftInMount(t, e.Mnt)
	out, err := testenv.GitTry(e.Mnt, "git fetch -q origin "+x+":refs/remotes/origin/x; git rev-parse -q --verify refs/remotes/origin/x; git update-ref refs/heads/main "+x)
	t.Logf("fetch of the crafted commit from origin, then update-ref: err %v\n%s", err, out)
	if mainHolds(t, e.Src, x) {
		t.Errorf("HOLE: main moved from %s to the crafted %s once git fetch had written it into a remote-tracking ref", base[:12], x[:12])
	}
}
