package upstream

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// More attacks on git's upstream path outside the scope, aimed at the
// defences upstream_attack_test.go's tests hold in place. Each test fails
// while the hole is open and passes once it is closed.

// shim2C is shimC with more operations. Like shimC, it only gives the
// agent control of *when* the system's git makes its requests.
const shim2C = shimPrelude + `
__attribute__((constructor)) static void atk(void) {
	const char *op = getenv("ATK_OP");
	if (!op) return;
	char *paths = getenv("ATK_PATHS");
	if (!strcmp(op, "unlinkmany")) {
		int ok = 0;
		for (char *p = strtok(paths, ":"); p; p = strtok(0, ":")) {
			if (unlink(p) == 0) ok++; else { printf("unlink %s: %s\n", p, strerror(errno)); }
		}
		printf("removed %d files\n", ok); fflush(stdout);
		touch(getenv("ATK_READY"));
		waitfile(getenv("ATK_GO"));
		_exit(0);
	}
	if (!strcmp(op, "mkdirs")) {
		umask(0);
		for (char *p = strtok(paths, ":"); p; p = strtok(0, ":")) {
			int r = mkdir(p, (mode_t)strtol(getenv("ATK_MODE"), 0, 8));
			printf("mkdir %s: %s\n", p, r ? strerror(errno) : "ok");
		}
		fflush(stdout);
		_exit(0);
	}
	if (!strcmp(op, "holdmany")) {
		int n = 0;
		for (char *p = strtok(paths, ":"); p; p = strtok(0, ":")) {
			int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd < 0) printf("open %s: %s\n", p, strerror(errno)); else n++;
		}
		printf("holding %d\n", n); fflush(stdout);
		touch(getenv("ATK_READY"));
		waitfile(getenv("ATK_GO"));
		_exit(0);
	}
	if (!strcmp(op, "forkwrite")) {
		const char *path = getenv("ATK_PATHS");
		const char *good = getenv("ATK_GOOD"), *bad = getenv("ATK_BAD");
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
		if (fd < 0) { printf("open %s: %s\n", path, strerror(errno)); fflush(stdout); _exit(1); }
		write(fd, good, strlen(good));
		fflush(stdout);
		pid_t child = fork();
		if (child == 0) {
			usleep(300000);
			ssize_t w = pwrite(fd, bad, strlen(bad), 0);
			printf("child wrote %zd forged bytes through its descriptor\n", w); fflush(stdout);
			touch(getenv("ATK_READY"));
			waitfile(getenv("ATK_GO"));
			_exit(0);
		}
		int r = close(fd);
		printf("parent close: %s\n", r ? strerror(errno) : "ok"); fflush(stdout);
		int st; waitpid(child, &st, 0);
		_exit(0);
	}
	if (!strcmp(op, "unlinkseq")) {
		int secs = atoi(getenv("ATK_SECS"));
		for (char *p = strtok(paths, ":"); p; p = strtok(0, ":")) {
			int r = unlink(p);
			printf("unlink %s: %s\n", p, r ? strerror(errno) : "ok"); fflush(stdout);
			sleep(secs);
		}
		_exit(0);
	}
	printf("unknown op %s\n", op); _exit(3);
}
`

// gitShim2 builds shim2C into a directory uid 1000 can read.
func gitShim2(t *testing.T) (so, dir string) { return gitShimFrom(t, shim2C) }

// agentBg runs script as the agent (uid 1000) in dir, in the background.
func agentBg(dir, script string) (*exec.Cmd, *testenv.SyncBuffer) {
	cmd := testenv.CommandIn(dir, "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

// TestUpstreamAttack2PutBackRacesRmdir: the defence
// TestUpstreamAttackRemovalWithoutItsDirectory holds makes a directory
// above a pending removal busy (EBUSY) -- but only while the removal is in the
// pending map. When git ends, the watcher takes *all* of that git's
// removals out of the map at once (due), then puts them back one by one,
// each with two ledger records, without holding upstreamRemovals.dirs.
// Meanwhile none of them is pending: the agent's rmdir of an in-scope
// directory above one of them succeeds, its put-back fails (ENOENT), and
// the file outside the scope is gone for good. One git removes 40
// filler files (docs/fill/*) and docs/img/logo.txt, all older upstream
// versions; the agent spins on `rmdir docs/img` (EBUSY until git exits).
func TestUpstreamAttack2PutBackRacesRmdir(t *testing.T) {
	testenv.Parallel(t)
	c, e, up := upstreamRepoScoped(t, `["src/**", "docs/*"]`)
	so, dir := gitShim2(t)
	src, mnt := e.Src, e.Mnt
	const nfill = 40
	testenv.GitAs(t, up, "mkdir -p docs/img docs/fill && printf 'logo v0\\n' > docs/img/logo.txt && for i in $(seq 1 "+fmt.Sprint(nfill)+"); do echo v0 $i > docs/fill/f$i.txt; done && git add docs && git commit -qm v0 && git push -q origin main")
	testenv.GitAs(t, mnt, "git pull -q --no-rebase origin main")
	if b, err := os.ReadFile(filepath.Join(src, "docs", "img", "logo.txt")); err != nil || string(b) != "logo v0\n" {
		t.Fatalf("docs/img/logo.txt after the pull: %q %v", b, err)
	}
	testenv.GitAs(t, up, "printf 'logo v1\\n' > docs/img/logo.txt && for i in $(seq 1 "+fmt.Sprint(nfill)+"); do echo v1 $i > docs/fill/f$i.txt; done && git commit -qam v1 && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	waitMirror(t, c, mnt, t1)

	paths := []string{"docs/img/logo.txt"}
	for i := 1; i <= nfill; i++ {
		paths = append(paths, fmt.Sprintf("docs/fill/f%d.txt", i))
	}
	ready, goFile := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	cmd, out := shimGit(mnt, so, "ATK_OP=unlinkmany", "ATK_PATHS="+strings.Join(paths, ":"), "ATK_READY="+ready, "ATK_GO="+goFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, ready, out)
	// While git lives, the directory is busy.
	if o, err := testenv.GitTry(mnt, "rmdir docs/img"); err == nil {
		t.Logf("rmdir docs/img while git lives succeeded: %s", o)
	} else {
		t.Logf("rmdir docs/img while git lives: %s", o)
	}
	// The agent spins until the put-back of docs/img/logo.txt has settled
	// (the stop file), 15 s at most: once the file is back, or known lost,
	// the race is decided, and the spin only takes CPU from other tests.
	stop := filepath.Join(dir, "stop")
	spin, spinOut := agentBg(mnt, `perl -e 'use Errno; my $end = time + 15; my %e; while (time < $end && ! -e $ARGV[0]) { if (rmdir "docs/img") { print "rmdir docs/img succeeded\n"; last } $e{$!+0}++; } print join(" ", map { "errno $_ x$e{$_}" } sort keys %e), "\n"' `+stop)
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	os.WriteFile(goFile, nil, 0o644)
	cmd.Wait()
	waitPutBack(t, mnt, "docs/img/logo.txt")
	os.WriteFile(stop, nil, 0o644)
	spin.Wait()
	t.Logf("shimmed git:\n%s", out)
	t.Logf("the agent's rmdir loop: %s", spinOut)
	den, _ := os.ReadFile(filepath.Join(mnt, ".intentfs", "denials"))
	for _, l := range strings.Split(string(den), "\n") {
		if strings.Contains(l, "logo") {
			t.Logf("denial: %s", l)
		}
	}
	for _, r := range e.Records() {
		if strings.Contains(r.Path(), "docs/img") {
			t.Logf("ledger: %s %s restored_from=%q", r.Gov().Event, r.Path(), r.Gov().RestoredFrom)
		}
	}
	if _, err := os.Stat(filepath.Join(src, "docs", "img", "logo.txt")); err != nil {
		v, code := c.Run("verify", "--source", src)
		t.Logf("intentfs verify --source (exit %d):\n%s", code, v)
		t.Fatalf("docs/img/logo.txt, outside the scope, is gone for good: %v", err)
	}
}

// TestUpstreamAttack2WorldWritableDirectory: a file git creates outside
// the scope is published with git's modes at most ("no set-ID bits,
// nothing writable by others", upstream_file.go), but a directory git
// makes there toward the tip keeps whatever mode git asked for. With
// umask 0, the real git pulls a new upstream directory, docs/newdir,
// outside the scope: it is made 0777 (anyone on the machine may add,
// remove or replace files below it in the source), owned by the agent;
// through the shimmed git, mkdir asks 01777 as well. A file published
// in it is 0644.
func TestUpstreamAttack2WorldWritableDirectory(t *testing.T) {
	testenv.Parallel(t)
	c, e, up := upstreamRepoScoped(t, `["src/**"]`)
	so, _ := gitShim2(t)
	src, mnt := e.Src, e.Mnt
	testenv.GitAs(t, up, "mkdir -p docs/newdir docs/sticky && echo new > docs/newdir/a.md && echo s > docs/sticky/s.md && git add docs && git commit -qm newdir && git push -q origin main")
	out := testenv.GitAs(t, mnt, "umask 000 && git pull -q --no-rebase origin main 2>&1; echo pulled")
	t.Logf("umask 000; git pull: %s", out)
	testenv.GitAs(t, up, "mkdir docs/sticky2 && echo s > docs/sticky2/s.md && git add docs && git commit -qm sticky2 && git push -q origin main")
	t2 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	waitMirror(t, c, mnt, t2)
	cmd, sout := shimGit(mnt, so, "ATK_OP=mkdirs", "ATK_PATHS=docs/sticky2", "ATK_MODE=7777")
	cmd.Run()
	t.Logf("shimmed git: %s", sout)
	var bad []string
	for _, p := range []string{"docs/newdir", "docs/newdir/a.md", "docs/sticky2"} {
		st, err := os.Stat(filepath.Join(src, p))
		if err != nil {
			t.Logf("%s: %v", p, err)
			continue
		}
		sys := st.Sys().(*syscall.Stat_t)
		t.Logf("%s: mode %04o uid %d", p, sys.Mode&0o7777, sys.Uid)
		if sys.Mode&0o7022 != 0 {
			bad = append(bad, fmt.Sprintf("%s %04o", p, sys.Mode&0o7777))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("git made entries outside the scope writable by group or others, or with set-ID/sticky bits: %v", bad)
	}
}

// TestUpstreamAttack2HeldSinkBusiesDirectoryForever: a removal git leaves
// incomplete is bounded (10 s), but a file git creates from the upstream
// is not: while its handle is open, every directory above it is busy
// (EBUSY to rename and rmdir), for as long as the git process lives. Any
// number of such files can be open on one path (the existence check looks
// at the source, where the unnamed files have no name). The shimmed git
// creates docs/img/logo.txt (the upstream's) five times and keeps the
// handles; 15 s later the agent's own in-scope directory docs/img, and
// docs/ for a session that owns docs/**, still cannot be renamed.
func TestUpstreamAttack2HeldSinkBusiesDirectoryForever(t *testing.T) {
	testenv.Parallel(t)
	c, e, up := upstreamRepoScoped(t, `["src/**", "docs/*"]`)
	so, dir := gitShim2(t)
	mnt := e.Mnt
	testenv.GitAs(t, up, "mkdir -p docs/img && printf 'logo\\n' > docs/img/logo.txt && git add docs/img && git commit -qm logo && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin && mkdir docs/img")
	waitMirror(t, c, mnt, t1)
	p := "docs/img/logo.txt"
	ready, goFile := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	cmd, out := shimGit(mnt, so, "ATK_OP=holdmany", "ATK_PATHS="+strings.Join([]string{p, p, p, p, p}, ":"), "ATK_READY="+ready, "ATK_GO="+goFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { os.WriteFile(goFile, nil, 0o644); cmd.Wait() }()
	waitHeld(t, ready, out)
	t.Logf("shimmed git: %s", out)
	// Busy while the file is young; no longer once it is past its time
	// (polled up to 20 s, twice the bound).
	var mv string
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		mv, err = testenv.GitTry(mnt, "mv docs/img docs/pic && echo renamed")
		if err == nil || !strings.Contains(mv, "busy") || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("mv docs/img docs/pic: %v %s", err, mv)
	if err != nil && strings.Contains(mv, "busy") {
		t.Fatalf("a file git keeps open outside the scope keeps the in-scope directory above it busy with no time bound: %s", mv)
	}
}

// TestUpstreamAttack2PublishStallsEveryDirectoryRename: every rename or
// removal of a directory anywhere in the mount takes upstreamRemovals.dirs
// for writing, and a publish holds it for reading while it asks the
// mirror for the tip, which waits up to 20 s for a fetch under way. The
// agent keeps a fetch always queued (it rewrites .git/FETCH_HEAD, which
// kicks one, faster than the 2 s debounce), has the shimmed git close a
// file it brings from the upstream, and then renames an unrelated
// directory of its own scope (src/a): the rename waits for the publish,
// about 20 s. Any session's directory renames and rmdirs (a checkout, an
// rm -rf of a build tree) stall the same way, over and over.
func TestUpstreamAttack2PublishStallsEveryDirectoryRename(t *testing.T) {
	// Serial: asserts a rename takes under 5s while its own kicker loads the machine.
	testenv.Serial(t)
	c, e, up := upstreamRepoScoped(t, `["src/**", "docs/*"]`)
	so, dir := gitShim2(t)
	mnt := e.Mnt
	testenv.GitAs(t, up, "mkdir -p docs/img && printf 'logo\\n' > docs/img/logo.txt && git add docs/img && git commit -qm logo && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin && mkdir docs/img src/a")
	waitMirror(t, c, mnt, t1)

	kick, kout := agentBg(mnt, `end=$(( $(date +%s) + 45 )); n=0; while [ $(date +%s) -lt $end ]; do : > .git/FETCH_HEAD; n=$((n+1)); sleep 0.02; done; echo kicked $n times`)
	if err := kick.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { kick.Process.Kill(); kick.Wait(); t.Logf("kicker: %s", kout) }()
	time.Sleep(3 * time.Second)
	t.Logf("status while kicking:\n%s", c.Must("status", "--mount", mnt))
	ready, goFile := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	cmd, out := shimGit(mnt, so, "ATK_OP=holdmany", "ATK_PATHS=docs/img/logo.txt", "ATK_READY="+ready, "ATK_GO="+goFile)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 600; i++ {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the shimmed git's create took %v: %s", time.Since(start).Round(time.Millisecond), out)
	// git writes nothing: the close (publish) is refused, after the tip is read.
	os.WriteFile(goFile, nil, 0o644)
	time.Sleep(time.Second)
	start = time.Now()
	mv, err := testenv.GitTry(mnt, "mv src/a src/b && echo renamed")
	took := time.Since(start)
	cmd.Wait()
	t.Logf("mv src/a src/b (in scope, unrelated) took %v: %v %s", took.Round(time.Millisecond), err, mv)
	if took > 5*time.Second {
		t.Fatalf("a rename of an unrelated in-scope directory waited %v for git's publish outside the scope", took.Round(time.Millisecond))
	}
}

// TestUpstreamAttack2PublishedModeFromUmask: what git publishes outside
// the scope is checked for its content and its executable bit, and its
// mode is otherwise the agent's umask. With umask 0777 the real git
// pulls the upstream's docs/guide.md: the human's file outside the scope,
// 0644 before, is replaced by the upstream's content with mode 0000, owned
// by the agent, which nobody but root and the agent can read or chmod.
func TestUpstreamAttack2PublishedModeFromUmask(t *testing.T) {
	testenv.Parallel(t)
	c, e, up := upstreamRepoScoped(t, `["src/**"]`)
	src, mnt := e.Src, e.Mnt
	before, _ := os.Stat(filepath.Join(src, "docs", "guide.md"))
	testenv.GitAs(t, up, "printf '# Guide\\n\\nv2\\n' > docs/guide.md && git commit -qam v2 && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	waitMirror(t, c, mnt, t1)
	out, err := testenv.GitTry(mnt, "umask 777 && git pull -q --no-rebase origin main && echo pulled")
	t.Logf("umask 777; git pull: %v %s", err, out)
	st, err := os.Stat(filepath.Join(src, "docs", "guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	b, _ := os.ReadFile(filepath.Join(src, "docs", "guide.md"))
	t.Logf("docs/guide.md before: %v; after: mode %04o uid %d content %q", before.Mode(), sys.Mode&0o7777, sys.Uid, b)
	if string(b) == "# Guide\n\nv2\n" && sys.Mode&0o444 != 0o444 {
		t.Fatalf("git replaced docs/guide.md outside the scope (mode %v before) with mode %04o", before.Mode(), sys.Mode&0o7777)
	}
}

// TestUpstreamAttack2WritesAfterPublishThroughTheMount: "writes after the
// check reach nothing". git creates docs/img/logo.txt (the upstream's),
// writes the upstream's bytes, forks, and the parent closes: the file is
// published. The child still holds the unnamed file's descriptor and
// overwrites it with forged bytes of the same length. Another process
// then reads docs/img/logo.txt through the mount: it must see the
// upstream's bytes, as the source holds.
func TestUpstreamAttack2WritesAfterPublishThroughTheMount(t *testing.T) {
	testenv.Parallel(t)
	c, e, up := upstreamRepoScoped(t, `["src/**", "docs/*"]`)
	so, dir := gitShim2(t)
	src, mnt := e.Src, e.Mnt
	testenv.GitAs(t, up, "mkdir -p docs/img && printf 'logo-upstream\\n' > docs/img/logo.txt && git add docs/img && git commit -qm logo && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin && mkdir docs/img")
	waitMirror(t, c, mnt, t1)
	ready, goFile := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	cmd, out := shimGit(mnt, so, "ATK_OP=forkwrite", "ATK_PATHS=docs/img/logo.txt", "ATK_GOOD=logo-upstream\n", "ATK_BAD=FORGED-BYTES\n", "ATK_READY="+ready, "ATK_GO="+goFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { os.WriteFile(goFile, nil, 0o644); cmd.Wait(); t.Logf("shimmed git:\n%s", out) }()
	// Ready comes after the child's write, which follows the parent's close.
	waitHeld(t, ready, out)
	viaMount, _ := testenv.GitTry(mnt, "cat docs/img/logo.txt")
	inSource, _ := os.ReadFile(filepath.Join(src, "docs", "img", "logo.txt"))
	t.Logf("through the mount: %q; in the source: %q", viaMount, inSource)
	if strings.Contains(viaMount, "FORGED") {
		t.Fatalf("a read through the mount sees bytes written after the check: %q (the source holds %q)", viaMount, inSource)
	}
	if viaMount != "logo-upstream" || string(inSource) != "logo-upstream\n" {
		t.Fatalf("the upstream's file was not published (through the mount %q, in the source %q): the attack proved nothing", viaMount, inSource)
	}
}

// TestUpstreamAttack2BarredGitStillRemoves: "A git process that left a
// removal incomplete may remove nothing more outside the scope". The bar
// is checked only for removals toward other content at the tip (which
// must be followed by git's creation), not for removals of files the tip
// no longer has, which are permanent. The shimmed git removes
// docs/guide.md (the tip has v2), never writes it, waits 12 s (the mount
// puts it back and bars this git), then removes docs/old.md (which the
// upstream deleted): the removal goes through.
func TestUpstreamAttack2BarredGitStillRemoves(t *testing.T) {
	testenv.Parallel(t)
	if testing.Short() {
		t.Skip("takes 15 s")
	}
	c, e, up := upstreamRepoScoped(t, `["src/**"]`)
	so, _ := gitShim2(t)
	src, mnt := e.Src, e.Mnt
	testenv.GitAs(t, up, "printf '# Old\\n' > docs/old.md && git add docs/old.md && git commit -qm old && git push -q origin main")
	testenv.GitAs(t, mnt, "git pull -q --no-rebase origin main")
	testenv.GitAs(t, up, "printf '# Guide\\n\\nv2\\n' > docs/guide.md && git rm -q docs/old.md && git commit -qam 'v2, no old' && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin")
	waitMirror(t, c, mnt, t1)
	cmd, out := shimGit(mnt, so, "ATK_OP=unlinkseq", "ATK_PATHS=docs/guide.md:docs/old.md", "ATK_SECS=12")
	cmd.Run()
	t.Logf("shimmed git:\n%s", out)
	den, _ := os.ReadFile(filepath.Join(mnt, ".intentfs", "denials"))
	t.Logf(".intentfs/denials:\n%s", den)
	if _, err := os.Stat(filepath.Join(src, "docs", "old.md")); err != nil && strings.Contains(out.String(), "unlink docs/old.md: ok") {
		t.Fatalf("the git process barred for leaving docs/guide.md's removal incomplete removed docs/old.md outside the scope")
	}
}

// TestUpstreamAttack2ExchangeParentOfSink: the checks held against
// RENAME_EXCHANGE and against a rename of the parent of the directory a
// file git brings from the upstream is created in. With the scope
// docs/* and docs/*/* (docs/a/b is in scope, docs/a/b/logo.txt is not),
// git holds docs/a/b/logo.txt; the agent exchanges docs/a with docs/c,
// exchanges docs/a/b with docs/c/d, and renames docs/a: each must fail
// (EBUSY), and git's close must publish docs/a/b/logo.txt where it was
// created, and nowhere else.
func TestUpstreamAttack2ExchangeParentOfSink(t *testing.T) {
	testenv.Parallel(t)
	c, e, up := upstreamRepoScoped(t, `["src/**", "docs/*", "docs/*/*"]`)
	so, dir := gitShim(t)
	src, mnt := e.Src, e.Mnt
	testenv.GitAs(t, up, "mkdir -p docs/a/b && printf 'logo\\n' > docs/a/b/logo.txt && git add docs/a && git commit -qm logo && git push -q origin main")
	t1 := testenv.GitAs(t, up, "git rev-parse HEAD")
	testenv.GitAs(t, mnt, "git fetch -q origin && mkdir -p docs/a/b docs/c/d")
	waitMirror(t, c, mnt, t1)
	content := filepath.Join(dir, "content")
	os.WriteFile(content, []byte("logo\n"), 0o644)
	ready, goFile := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	cmd, out := shimGit(mnt, so, "ATK_OP=hold", "ATK_PATH=docs/a/b/logo.txt", "ATK_MODE=644", "ATK_SRC="+content, "ATK_READY="+ready, "ATK_GO="+goFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, ready, out)
	// renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) on x86_64.
	xchg := func(a, b string) string {
		o, _ := testenv.GitTry(mnt, `perl -e 'syscall(316, -100, $ARGV[0], -100, $ARGV[1], 2) == 0 ? print "exchanged\n" : print "$!\n"' `+a+` `+b)
		return o
	}
	r1 := xchg("docs/a", "docs/c")
	r2 := xchg("docs/a/b", "docs/c/d")
	r3, _ := testenv.GitTry(mnt, "mv docs/a docs/z 2>&1 && echo renamed")
	t.Logf("exchange docs/a docs/c: %s; exchange docs/a/b docs/c/d: %s; mv docs/a docs/z: %s", r1, r2, r3)
	os.WriteFile(goFile, nil, 0o644)
	cmd.Wait()
	t.Logf("shimmed git:\n%s", out)
	var where []string
	// Published at git's close; on the cached data path, which sees no
	// close, once git has ended.
	testenv.WaitFor(t, func() bool {
		where = nil
		for _, p := range []string{"docs/a/b/logo.txt", "docs/c/logo.txt", "docs/c/b/logo.txt", "docs/c/d/logo.txt", "docs/a/d/logo.txt", "docs/z/b/logo.txt"} {
			if _, err := os.Stat(filepath.Join(src, p)); err == nil {
				where = append(where, p)
			}
		}
		return len(where) > 0
	}, "git's file to be published")
	t.Logf("published at: %v", where)
	if strings.Contains(r1+r2+r3, "exchanged") || strings.Contains(r3, "renamed") || len(where) != 1 || where[0] != "docs/a/b/logo.txt" {
		t.Fatalf("a directory above git's pending file moved, or the file was published elsewhere: %s / %s / %s; published at %v", r1, r2, r3, where)
	}
}
