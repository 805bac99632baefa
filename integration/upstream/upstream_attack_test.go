package upstream

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
)

// Attacks on git's upstream path outside the scope (see upstream_test.go).
// Each test fails while the hole is open and passes once it is closed.

// shimPrelude is what the shims share: headers, and waiting for and
// making the files a test steps them with.
const shimPrelude = `#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
static void waitfile(const char *p) { while (p && access(p, F_OK) != 0) usleep(50000); }
static void touch(const char *p) { if (p) close(open(p, O_WRONLY | O_CREAT, 0666)); }
`

// shimC is loaded into the system's git with LD_PRELOAD: the agent's code
// then runs in a process whose /proc/PID/exe is the root-owned
// /usr/bin/git, which is all TrustedGit checks. It only gives the agent
// control of *when* git's requests are made; every byte still goes through
// the mount's checks.
const shimC = shimPrelude + `
__attribute__((constructor)) static void atk(void) {
	const char *op = getenv("ATK_OP");
	if (!op) return;
	const char *path = getenv("ATK_PATH");
	if (!strcmp(op, "hold")) {
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, (mode_t)strtol(getenv("ATK_MODE"), 0, 8));
		if (fd < 0) { printf("open %s: %s\n", path, strerror(errno)); fflush(stdout); _exit(1); }
		int in = open(getenv("ATK_SRC"), O_RDONLY);
		char buf[65536]; ssize_t n;
		while ((n = read(in, buf, sizeof buf)) > 0) write(fd, buf, n);
		close(in);
		printf("created %s\n", path); fflush(stdout);
		touch(getenv("ATK_READY"));
		waitfile(getenv("ATK_GO"));
		int r = close(fd);
		printf("close: %s\n", r ? strerror(errno) : "ok"); fflush(stdout);
		_exit(r ? 2 : 0);
	}
	if (!strcmp(op, "unlinkhold")) {
		int r = unlink(path);
		printf("unlink %s: %s\n", path, r ? strerror(errno) : "ok"); fflush(stdout);
		touch(getenv("ATK_READY"));
		waitfile(getenv("ATK_GO"));
		_exit(r ? 2 : 0);
	}
	if (!strcmp(op, "unlinkloop")) {
		int secs = atoi(getenv("ATK_SECS")), removals = 0;
		for (int i = 0; i < secs * 20; i++) {
			if (access(path, F_OK) == 0) {
				if (unlink(path) == 0) { removals++; printf("removed at %d ms\n", i * 50); }
				else printf("unlink at %d ms: %s\n", i * 50, strerror(errno));
				fflush(stdout);
			}
			usleep(50000);
		}
		printf("removals %d\n", removals); fflush(stdout);
		_exit(0);
	}
	printf("unknown op %s\n", op); _exit(3);
}
`

// gitShim builds shimC into a directory uid 1000 can read.
func gitShim(t *testing.T) (so, dir string) { return gitShimFrom(t, shimC) }

// gitShimFrom builds the shim source src into a directory uid 1000 can
// read.
func gitShimFrom(t *testing.T, src string) (so, dir string) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is needed to build the LD_PRELOAD shim")
	}
	dir = t.TempDir()
	os.Chmod(dir, 0o777)
	c := filepath.Join(dir, "shim.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	so = filepath.Join(dir, "shim.so")
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", so, c).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	os.Chmod(so, 0o755)
	return so, dir
}

// shimGit returns /usr/bin/git with the shim, run as the agent in dir.
func shimGit(dir, so string, env ...string) (*exec.Cmd, *testenv.SyncBuffer) {
	// Only git gets the shim: setpriv and env run without it.
	args := append([]string{"--reuid=1000", "--regid=1000", "--clear-groups", "env", "LD_PRELOAD=" + so}, env...)
	cmd := testenv.CommandIn(dir, "setpriv", append(args, "/usr/bin/git", "--version")...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

// waitHeld waits for the shim to say it holds its creation.
func waitHeld(t *testing.T, ready string, out *testenv.SyncBuffer) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(ready); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the shimmed git never held its creation:\n%s", out)
}

// waitMirror waits until intentfs status shows the mirror at commit.
func waitMirror(t *testing.T, c *testenv.CLI, mnt, commit string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := c.Must("status", "--mount", mnt)
		if strings.Contains(st, " at "+commit[:12]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror never reached %s:\n%s", commit, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestUpstreamAttackHeldSinkOutlivesTheTip: the content check at close is
// against the tip the mirror had when git *created* the file, not the tip
// at close. git creates docs/new.md while upstream (T1) has it, holds it
// open; upstream deletes it (T2) and the mirror fetches T2; git closes:
// T1's file is published at a path the upstream's tip no longer has, and
// recorded as restored from T1. (A resurrected file, or any older
// version, against the tip: a rollback the README says cannot happen.)
func TestUpstreamAttackHeldSinkOutlivesTheTip(t *testing.T) {
	testenv.Parallel(t)
	c, e, up := upstreamRepo(t)
	so, dir := gitShim(t)
	src, mnt := e.Src, e.Mnt

	testenv.GitAs(t, up, "printf '# New\\n\\nv1, with the bug\\n' > docs/new.md && git add docs/new.md && git commit -qm 'new page' && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	waitMirror(t, c, mnt, t1)

	content := filepath.Join(dir, "content")
	os.WriteFile(content, []byte("# New\n\nv1, with the bug\n"), 0o644)
	ready, goFile := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	cmd, out := shimGit(mnt, so, "ATK_OP=hold", "ATK_PATH=docs/new.md", "ATK_MODE=644", "ATK_SRC="+content, "ATK_READY="+ready, "ATK_GO="+goFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, ready, out)

	// Upstream deletes the page (T2); the mirror fetches it.
	testenv.GitAs(t, up, "git rm -q docs/new.md && git commit -qm 'drop the page' && git push -q origin main")
	t2 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	waitMirror(t, c, mnt, t2)

	os.WriteFile(goFile, nil, 0o644)
	cmd.Wait()
	t.Logf("shimmed git after close (mirror at %s):\n%s", t2[:12], out)

	if b, err := os.ReadFile(filepath.Join(src, "docs", "new.md")); err == nil {
		var rec string
		for _, r := range e.Records() {
			if r.Path() == "docs/new.md" && r.Gov().Event == ledger.EventCreate {
				rec = string(r.Gov().Event) + " restored_from=" + r.Gov().RestoredFrom
			}
		}
		t.Fatalf("docs/new.md was published with %q although the upstream's tip %s has no such file (ledger: %s)", b, t2[:12], rec)
	}
}

// upstreamRepoScoped is upstreamRepo with INT-001 owning policyScope.
func upstreamRepoScoped(t *testing.T, scope string) (c *testenv.CLI, e *testenv.Env, up string) {
	return upstreamRepoIn(t, scope, nil)
}

// upstreamRepoIn is upstreamRepoScoped with a chance to prepare the
// directory everything is made in (mount a filesystem on it).
func upstreamRepoIn(t *testing.T, scope string, prepare func(root string)) (c *testenv.CLI, e *testenv.Env, up string) {
	pol := "active_intents:\n  - id: INT-001\n    name: the api\n    status: IN_PROGRESS\n    owned_scope: " + scope + "\n"
	return upstreamFixture(t, pol, nil, prepare)
}

// TestUpstreamAttackSinkFollowsItsDirectory: the file git creates outside
// the scope is published, at close, in whatever its directory's node is
// called by then. With a scope that owns a directory but not the files
// in it (docs/*: docs/img is in scope, docs/img/logo.txt is not), git
// creates docs/img/logo.txt (the upstream's), the agent renames the
// still empty docs/img to docs/pic (allowed: the unnamed file is not in
// the listing the rename is checked against), and the close publishes
// docs/pic/logo.txt: a path outside the scope the upstream's tip does not
// have, which the ledger never names (it records docs/img/logo.txt).
func TestUpstreamAttackSinkFollowsItsDirectory(t *testing.T) {
	testenv.Parallel(t)
	c, e, up := upstreamRepoScoped(t, `["src/**", "docs/*"]`)
	so, dir := gitShim(t)
	src, mnt := e.Src, e.Mnt

	testenv.GitAs(t, up, "mkdir -p docs/img && printf 'logo\\n' > docs/img/logo.txt && git add docs/img && git commit -qm logo && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	waitMirror(t, c, mnt, t1)

	testenv.GitAs(t, mnt, "mkdir docs/img")
	content := filepath.Join(dir, "content")
	os.WriteFile(content, []byte("logo\n"), 0o644)
	ready, goFile := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	cmd, out := shimGit(mnt, so, "ATK_OP=hold", "ATK_PATH=docs/img/logo.txt", "ATK_MODE=644", "ATK_SRC="+content, "ATK_READY="+ready, "ATK_GO="+goFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, ready, out)
	mv, mvErr := testenv.GitTry(mnt, "mv docs/img docs/pic && echo renamed")
	t.Logf("mv docs/img docs/pic: %v %s", mvErr, mv)
	os.WriteFile(goFile, nil, 0o644)
	cmd.Wait()
	t.Logf("shimmed git:\n%s", out)

	if b, err := os.ReadFile(filepath.Join(src, "docs", "pic", "logo.txt")); err == nil {
		var recs []string
		for _, r := range e.Records() {
			if strings.Contains(r.Path(), "logo") {
				recs = append(recs, string(r.Gov().Event)+" "+r.Path()+" restored_from="+r.Gov().RestoredFrom)
			}
		}
		t.Fatalf("docs/pic/logo.txt (outside the scope, not in the upstream's tip) holds %q; the ledger says: %v", b, recs)
	}
}

// TestUpstreamAttackRemovalWithoutItsDirectory: a removal git makes
// outside the scope toward the upstream's other content is put back when
// git exits without writing the file again, by path. If the directory is
// gone by then, the put-back fails and the file is gone for good. With a
// scope that owns the directory but not the file in it (docs/*), the
// agent removes the emptied directory itself: docs/img/logo.txt, an older
// upstream version the agent may not change, is deleted permanently.
func TestUpstreamAttackRemovalWithoutItsDirectory(t *testing.T) {
	testenv.Parallel(t)
	c, e, up := upstreamRepoScoped(t, `["src/**", "docs/*"]`)
	so, dir := gitShim(t)
	src, mnt := e.Src, e.Mnt
	// The logo, v0, is in the agent's checkout; upstream moves to v1.
	testenv.GitAs(t, up, "mkdir -p docs/img && printf 'logo v0\\n' > docs/img/logo.txt && git add docs/img && git commit -qm logo && git push -q origin main")
	testenv.GitAs(t, mnt, "git pull -q --no-rebase origin main")
	if b, err := os.ReadFile(filepath.Join(src, "docs", "img", "logo.txt")); err != nil || string(b) != "logo v0\n" {
		t.Fatalf("docs/img/logo.txt after the pull: %q %v", b, err)
	}
	testenv.GitAs(t, up, "printf 'logo v1\\n' > docs/img/logo.txt && git commit -qam 'logo v1' && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	waitMirror(t, c, mnt, t1)

	ready, goFile := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	cmd, out := shimGit(mnt, so, "ATK_OP=unlinkhold", "ATK_PATH=docs/img/logo.txt", "ATK_READY="+ready, "ATK_GO="+goFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, ready, out)
	rm, rmErr := testenv.GitTry(mnt, "rmdir docs/img && echo removed the directory")
	t.Logf("rmdir docs/img: %v %s", rmErr, rm)
	os.WriteFile(goFile, nil, 0o644)
	cmd.Wait()
	t.Logf("shimmed git:\n%s", out)
	// The put-back runs once the git process has ended, and says so.
	waitPutBack(t, mnt, "docs/img/logo.txt")
	den, _ := os.ReadFile(filepath.Join(mnt, ".intentfs", "denials"))
	t.Logf(".intentfs/denials:\n%s", den)
	if _, err := os.Stat(filepath.Join(src, "docs", "img", "logo.txt")); err != nil {
		t.Fatalf("docs/img/logo.txt, outside the scope, is gone for good: %v", err)
	}
}

// TestUpstreamAttackRemovalKeptMissing: a removal git does not complete
// was put back a minute after that git's last removal, and the same git
// could simply remove it again. A process running as git that removes the
// file whenever it reappears kept a file outside the scope missing for as
// long as it ran. Now the removal is put back after 10 s, and that git may
// remove nothing more.
func TestUpstreamAttackRemovalKeptMissing(t *testing.T) {
	testenv.Parallel(t)
	if testing.Short() {
		t.Skip("takes 30 s")
	}
	c, e, up := upstreamRepo(t)
	so, _ := gitShim(t)
	src, mnt := e.Src, e.Mnt
	testenv.GitAs(t, up, "printf '# Guide\\n\\nv2\\n' > docs/guide.md && git commit -qam v2 && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	waitMirror(t, c, mnt, t1)

	cmd, out := shimGit(mnt, so, "ATK_OP=unlinkloop", "ATK_PATH=docs/guide.md", "ATK_SECS=25")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	present, samples := 0, 0
	// Past upstreamplan.RemovalFor (10 s), the removal is put back; the same git
	// then tries again for the rest of its time.
	for start := time.Now(); time.Since(start) < 24*time.Second; time.Sleep(250 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(src, "docs", "guide.md")); err == nil {
			present++
		}
		samples++
	}
	cmd.Wait()
	t.Logf("shimmed git:\n%s", out)
	t.Logf("docs/guide.md was present in %d of %d samples over 24 s", present, samples)
	if strings.Count(out.String(), "removed at") > 1 {
		t.Fatalf("the same git removed docs/guide.md again after the mount put it back: it stays missing (present in %d of %d samples)", present, samples)
	}
}

// TestUpstreamAttackHeldSinkRealGit is TestUpstreamAttackHeldSinkOutlivesTheTip
// without LD_PRELOAD: the real git creates the file (git diff --output),
// and its textconv helper, which inherits git's descriptor, writes the
// upstream's old bytes through it and closes it when the agent chooses.
func TestUpstreamAttackHeldSinkRealGit(t *testing.T) {
	testenv.Parallel(t)
	c, e, up := upstreamRepo(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	src, mnt := e.Src, e.Mnt

	testenv.GitAs(t, up, "printf '# New\\n\\nv1, with the bug\\n' > docs/new.md && git add docs/new.md && git commit -qm 'new page' && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "printf 'package api\\n\\nfunc util() { _ = 1 }\\n' > src/util.go && git commit -qam 'util' && git fetch -q origin")
	waitMirror(t, c, mnt, t1)

	ready := filepath.Join(dir, "ready")
	os.WriteFile(filepath.Join(dir, "attrs"), []byte("*.go diff=hold\n"), 0o644)
	// The textconv helper holds git's descriptor on docs/new.md (fd 3,
	// inherited) without closing any copy of it: every close is a FLUSH,
	// and the first one publishes. So it forks nothing until it has
	// written: it waits on a FIFO, writes with the printf builtin (the
	// shell's restore of its stdout is the first close), then runs cat.
	fifo := filepath.Join(dir, "go.fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(fifo, 0o666)
	tc := filepath.Join(dir, "tc.sh")
	os.WriteFile(tc, []byte(`#!/bin/sh
if [ ! -e `+ready+` ]; then
  : > `+ready+`
  read x < `+fifo+`
  printf '# New\n\nv1, with the bug\n' >&3
fi
exec cat "$1"
`), 0o755)
	cmd := testenv.CommandIn(mnt, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "git",
		"-c", "core.attributesFile="+filepath.Join(dir, "attrs"), "-c", "diff.hold.textconv="+tc,
		"diff", "--output=docs/new.md", "HEAD~1", "HEAD", "--", "src/util.go")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, ready, &out)

	testenv.GitAs(t, up, "git rm -q docs/new.md && git commit -qm 'drop the page' && git push -q origin main")
	t2 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	waitMirror(t, c, mnt, t2)

	if err := os.WriteFile(fifo, []byte("go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	t.Logf("git diff --output=docs/new.md (mirror at %s): %v\n%s", t2[:12], err, &out)
	if b, err := os.ReadFile(filepath.Join(src, "docs", "new.md")); err == nil {
		t.Fatalf("docs/new.md was published with %q although the upstream's tip %s has no such file", b, t2[:12])
	}
}

// TestUpstreamAttackRemovalPutBackOutOfInodes: the put-back of a removal
// git did not complete needs a new inode in the source's filesystem. The
// agent, confined to src/**, runs git to remove docs/guide.md (an older
// upstream version, toward the tip's), fills the filesystem's inodes with
// empty files in its own scope, lets git exit (the put-back fails:
// ENOSPC), and deletes its files: the guide is gone for good. On ext4,
// root's reserved blocks do not cover inodes; here a tmpfs with few inodes
// stands for the source's filesystem.
func TestUpstreamAttackRemovalPutBackOutOfInodes(t *testing.T) {
	// Serial: in parallel, under load, git's removal never settled within 30s on the inode-starved source; serial until that is understood.
	testenv.Serial(t)
	c, e, up := upstreamRepoIn(t, `["src/**"]`, func(root string) {
		if err := syscall.Mount("intentfs-test", root, "tmpfs", 0, "size=256m,nr_inodes=4000,mode=0755"); err != nil {
			t.Skipf("cannot mount a tmpfs: %v", err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(root, syscall.MNT_DETACH) })
	})
	so, dir := gitShim(t)
	src, mnt := e.Src, e.Mnt
	testenv.GitAs(t, up, "printf '# Guide\\n\\nv2\\n' > docs/guide.md && git commit -qam v2 && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	waitMirror(t, c, mnt, t1)

	ready, goFile := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	cmd, out := shimGit(mnt, so, "ATK_OP=unlinkhold", "ATK_PATH=docs/guide.md", "ATK_READY="+ready, "ATK_GO="+goFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, ready, out)
	fill, _ := testenv.GitTry(mnt, "mkdir src/fill && i=0; while : > src/fill/$i 2>/dev/null; do i=$((i+1)); done; echo made $i files")
	t.Logf("filling the inodes in src/: %s", fill)
	os.WriteFile(goFile, nil, 0o644)
	cmd.Wait()
	t.Logf("shimmed git:\n%s", out)
	waitPutBack(t, mnt, "docs/guide.md")
	rm, _ := testenv.GitTry(mnt, "rm -rf src/fill && echo removed the files")
	t.Logf("%s", rm)
	den, _ := os.ReadFile(filepath.Join(mnt, ".intentfs", "denials"))
	t.Logf(".intentfs/denials:\n%s", den)
	if _, err := os.Stat(filepath.Join(src, "docs", "guide.md")); err != nil {
		t.Fatalf("docs/guide.md, outside the scope, is gone for good: %v", err)
	}
}

// waitPutBack waits for the denial that settles git's removal of rel
// after the git process ended: the file was put back, or could not be.
func waitPutBack(t *testing.T, mnt, rel string) {
	t.Helper()
	testenv.WaitFor(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(mnt, ".intentfs", "denials"))
		return testenv.LineWith(string(b), "UPSTREAM_UNVERIFIED", rel, "git ended without writing it again")
	}, "the settling of git's removal of "+rel)
}
