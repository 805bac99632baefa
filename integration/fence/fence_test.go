package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// The fence tests attack the mount as an unprivileged agent (uid 1000)
// served by a root daemon, one test per class of hole (see the README's
// security model). Each asserts that the attack fails and leaves the
// source as it was.

// asAgent runs fn on an OS thread of its own whose credentials are the
// agent's (uid and gid 1000, no supplementary groups, no capabilities).
// Linux credentials are per thread; the raw system calls change only this
// one, and the thread is never returned to the scheduler, so the rest of
// the test keeps root. Used for system calls no shell tool makes (ioctl).
func asAgent(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			done <- e
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, testenv.AgentGID, testenv.AgentGID, testenv.AgentGID); e != 0 {
			done <- e
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, testenv.AgentUID, testenv.AgentUID, testenv.AgentUID); e != 0 {
			done <- e
			return
		}
		defer func() { done <- nil }()
		fn()
	}()
	if err := <-done; err != nil {
		t.Fatalf("switching a thread to uid %d: %v", testenv.AgentUID, err)
	}
}

// ioctlBuf issues ioctl(fd, cmd, &buf[0]) and returns the errno.
func ioctlBuf(fd int, cmd uintptr, buf []byte) syscall.Errno {
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), cmd, uintptr(unsafe.Pointer(&buf[0])))
	return e
}

// lsattrSource returns the inode flags of a source file, read directly.
func lsattrSource(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("lsattr", "-d", path).CombinedOutput()
	if err != nil {
		t.Fatalf("lsattr %s: %v %s", path, err, out)
	}
	return strings.Fields(string(out))[0]
}

// extMoveExt is EXT4_IOC_MOVE_EXT, _IOWR('f', 15, struct move_extent):
// its argument carries a file descriptor number (donor_fd), which a
// forwarded ioctl would resolve in the daemon's descriptor table.
const extMoveExt = 0xc028660f

// fsIocGetversion is FS_IOC_GETVERSION, _IOR('v', 1, long): harmless, but
// not on the reviewed list, so it stands for every unknown ioctl.
const fsIocGetversion = 0x80087601

// fsIocFsgetxattr is FS_IOC_FSGETXATTR, _IOR('X', 31, struct fsxattr).
const fsIocFsgetxattr = 0x801c581f

// TestFenceIoctl: ioctls forwarded to the daemon ran as root on the
// daemon's descriptor, bypassing policy, modes and the caller's fd table.
func TestFenceIoctl(t *testing.T) {
	testenv.Parallel(t)
	if _, err := exec.LookPath("chattr"); err != nil {
		if os.Getenv("INTENTFS_REQUIRE_FUSE") == "1" {
			t.Fatal("chattr and lsattr (e2fsprogs) are required (.ci/run installs them)")
		}
		t.Skip("chattr (e2fsprogs) is not installed")
	}
	e := mountFence(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/in.txt": "in\n", "out.txt": "out\n"},
		func(src string) { testenv.ChownTree(t, src) })
	e.ReachableByAgent()
	files := []string{"src/in.txt", "out.txt", "src"}
	before := map[string]string{}
	for _, f := range files {
		before[f] = lsattrSource(t, filepath.Join(e.Src, f))
	}
	// chattr opens read-only and sets the flags with FS_IOC_SETFLAGS: +i
	// and +a need CAP_LINUX_IMMUTABLE (the kernel checks the caller), the
	// others (+d nodump, +A noatime, +S sync) only ownership, which the
	// filesystem checked against the root daemon.
	for _, f := range files {
		for _, flag := range []string{"+i", "+a", "+d", "+A", "+S"} {
			if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "chattr "+flag+" "+f); err == nil {
				t.Errorf("as uid %d, chattr %s %s succeeded through the mount: %s", testenv.AgentUID, flag, f, out)
			}
		}
		if got := lsattrSource(t, filepath.Join(e.Src, f)); got != before[f] {
			t.Errorf("%s: inode flags changed through the mount: %s -> %s", f, before[f], got)
		}
	}
	// Reading flags stays possible: lsattr is on the reviewed list.
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "lsattr src/in.txt && lsattr -d src"); err != nil {
		t.Errorf("lsattr through the mount: %v %s", err, out)
	}

	// O_CLOEXEC on every raw open: a child another test forks meanwhile
	// would otherwise keep the file, and this mount busy at its unmount.
	asAgent(t, func() {
		rw, err := syscall.Open(filepath.Join(e.Mnt, "src/in.txt"), syscall.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			t.Errorf("open rw: %v", err)
			return
		}
		defer syscall.Close(rw)
		// An ioctl naming a descriptor must never reach the daemon: before
		// the fix, each donor_fd was looked up in the daemon's table
		// (EBADF for a free slot, another error for a taken one).
		errs := map[syscall.Errno]int{}
		for donor := range 64 {
			var me [40]byte
			binary.LittleEndian.PutUint32(me[4:], uint32(donor))
			binary.LittleEndian.PutUint64(me[24:], 1)
			errs[ioctlBuf(rw, extMoveExt, me[:])]++
		}
		if len(errs) != 1 || errs[syscall.ENOTTY] != 64 {
			t.Errorf("EXT4_IOC_MOVE_EXT with donor fds 0..63 through the mount: errnos %v, want ENOTTY for all", errs)
		}
		// Unknown ioctls are refused, on files and on directories.
		d, err := syscall.Open(filepath.Join(e.Mnt, "src"), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			t.Errorf("open dir: %v", err)
			return
		}
		defer syscall.Close(d)
		var v [8]byte
		for _, fd := range []int{rw, d} {
			if errno := ioctlBuf(fd, fsIocGetversion, v[:]); errno != syscall.ENOTTY {
				t.Errorf("FS_IOC_GETVERSION through the mount: %v, want ENOTTY", errno)
			}
			var fa [28]byte
			if errno := ioctlBuf(fd, fsIocFsgetxattr, fa[:]); errno != 0 {
				t.Errorf("FS_IOC_FSGETXATTR (read-only, allowed) through the mount: %v", errno)
			}
		}
		// FICLONE takes a descriptor as its argument: a clone into a mount
		// file must fail and change nothing.
		dst, err := syscall.Open(filepath.Join(e.Mnt, "src/clone.txt"), syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			t.Errorf("create: %v", err)
			return
		}
		defer syscall.Close(dst)
		if err := unix.IoctlFileClone(dst, rw); err == nil {
			t.Errorf("FICLONE through the mount succeeded")
		}
	})
	if got, _ := e.SrcContent("src/clone.txt"); got != "" {
		t.Errorf("clone target has content %q", got)
	}
	if got, _ := e.SrcContent("src/in.txt"); got != "in\n" {
		t.Errorf("src/in.txt changed: %q", got)
	}
}

// TestFenceObjectStore: kept versions must not let the agent read what
// the source's modes hide from it.
func TestFenceObjectStore(t *testing.T) {
	testenv.Parallel(t)
	var planted string
	e := mountFence(t, testenv.ScopePolicy, "INT-002", map[string]string{"shared/drop.txt": "TOP-SECRET-PREIMAGE\n", "old.txt": "OLD-STORE-SECRET\n"},
		func(src string) {
			// A world-writable, owner-only-readable file: the agent may
			// append to it, never read it.
			if err := os.Chmod(filepath.Join(src, "shared/drop.txt"), 0o622); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(src, "shared"), 0o777); err != nil {
				t.Fatal(err)
			}
			// A store left by an earlier version: world-readable.
			st := objects.New(src)
			fd, err := syscall.Open(filepath.Join(src, "old.txt"), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fd)
			if err := st.KeepFd(fd, testenv.ShaOf([]byte("OLD-STORE-SECRET\n"))); err != nil {
				t.Fatal(err)
			}
			planted, _ = st.Path(testenv.ShaOf([]byte("OLD-STORE-SECRET\n")))
			for p := planted; p != src; p = filepath.Dir(p) {
				mode := os.FileMode(0o755)
				if p == planted {
					mode = 0o444
				}
				if err := os.Chmod(p, mode); err != nil {
					t.Fatal(err)
				}
			}
		})
	e.ReachableByAgent()
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "cat shared/drop.txt"); err == nil {
		t.Fatalf("test bug: the agent can read the file directly: %s", out)
	}
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "echo appended >> shared/drop.txt"); err != nil {
		t.Fatalf("append as uid %d: %v %s", testenv.AgentUID, err, out)
	}
	r := e.WaitRecord("append", testenv.Event(ledger.EventWrite, "shared/drop.txt"))
	if r.Gov().PreImage != "stored" {
		t.Fatalf("pre-image not kept (%q): the test proves nothing", r.Gov().PreImage)
	}
	// Every way the agent might reach the store: through the mount, in
	// the source directly, by listing and by exact name.
	kept, _ := objects.New(e.Src).Path(ledger.Str(r.Gov().PreHash))
	relKept, _ := filepath.Rel(e.Src, kept)
	relPlanted, _ := filepath.Rel(e.Src, planted)
	for _, script := range []string{
		"cat " + relKept,
		"cat " + relPlanted,
		"cat " + kept,
		"cat " + planted,
		"grep -r SECRET .orchestration/",
		"grep -r SECRET " + filepath.Join(e.Src, ".orchestration"),
		"ls .orchestration/objects/sha256",
	} {
		out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, script)
		if err == nil || strings.Contains(out, "SECRET") {
			t.Errorf("as uid %d, %q: err=%v\n%s", testenv.AgentUID, script, err, out)
		}
	}
	// The daemon's owner keeps full access: diff and revert need it.
	if b, err := os.ReadFile(kept); err != nil || string(b) != "TOP-SECRET-PREIMAGE\n" {
		t.Errorf("root reading the kept pre-image: %v %q", err, b)
	}
	for _, p := range []string{filepath.Join(e.Src, objects.Dir), filepath.Dir(kept), filepath.Dir(planted)} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v (%v), want 0700", p, st.Mode().Perm(), err)
		}
	}
	if st, err := os.Stat(kept); err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Errorf("%s: mode %v (%v), want owner-only", kept, st.Mode().Perm(), err)
	}
}

// TestFenceGovernanceFiles: the files that change what intentfs or git
// does are governance, not work, even under a scope of "**".
func TestFenceGovernanceFiles(t *testing.T) {
	testenv.Parallel(t)
	e := mountFence(t, testenv.ScopePolicy, "INT-002", map[string]string{".intentignore": "build/\n", "main.go": "package main\n", "sub/readme": "x\n"},
		func(src string) {
			for _, dir := range []string{src, filepath.Join(src, "sub")} {
				if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
					t.Fatalf("git init: %v %s", err, out)
				}
			}
			// A submodule and a worktree the human made.
			for _, d := range []string{".git/modules/m", ".git/worktrees/w"} {
				if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			testenv.ChownTree(t, src)
		})
	e.ReachableByAgent()
	// Each attack writes a file that would switch governance off or make
	// git run or read what the agent chose.
	attacks := []struct{ name, script string }{
		{".git/gitdir-by-rename", `echo /tmp/agent > .git/ORIG_HEAD && mv .git/ORIG_HEAD .git/commondir`},
		{".git/gitdir-by-link", `ln .git/HEAD .git/commondir`},
		{".intentignore", `printf '**\n' > .intentignore`},
		{".orchestration/.intentignore", `printf '**\n' > .orchestration/.intentignore`},
		{".git/commondir", `echo /tmp/agent > .git/commondir`},
		{".git/config", `printf '[core]\n\tfsmonitor = /tmp/agent/run\n' >> .git/config`},
		{".git/hooks/pre-commit", `printf '#!/bin/sh\necho pwned\n' > .git/hooks/pre-commit`},
		{".git/objects/info/alternates", `echo /tmp/agent/objects > .git/objects/info/alternates`},
		{".git/info/exclude", `echo '*.go' >> .git/info/exclude`},
		{".git/info/attributes", `echo '* filter=agent' > .git/info/attributes`},
		{".git/modules/m/config", `echo x > .git/modules/m/config`},
		{".git/worktrees/w/commondir", `echo /tmp/agent > .git/worktrees/w/commondir`},
		{".git/config.worktree", `echo '[core]' > .git/config.worktree`},
		{"sub/.git/hooks/post-checkout", `printf '#!/bin/sh\necho pwned\n' > sub/.git/hooks/post-checkout`},
		{"sub/.git/config", `echo '[core]' >> sub/.git/config`},
		{".git/hooks/pre-commit (by symlink)", `ln -s /tmp/agent/hook .git/hooks/pre-commit`},
	}
	snapshot := func() map[string]string { return treeContents(t, e.Src) }
	before := snapshot()
	for _, a := range attacks {
		out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "export HOME=/nonexistent; "+a.script)
		// On the cached data path an append is refused at write(2), which
		// the shell's built-in echo and printf report as "I/O error"
		// whatever the errno; the tree is compared below either way.
		refused := strings.Contains(out, "Permission denied") || testenv.TestDataPath() == "cached" && strings.Contains(out, "I/O error")
		if err == nil || !refused {
			t.Errorf("%s: as uid %d, %q: want Permission denied, got err=%v %s", a.name, testenv.AgentUID, a.script, err, out)
		}
	}
	// ORIG_HEAD is git state (allowed); everything else must be as it was.
	after := snapshot()
	delete(after, ".git/ORIG_HEAD")
	if diff := diffTrees(before, after); diff != "" {
		t.Errorf("source changed by refused writes:\n%s", diff)
	}
	denied := map[string]bool{}
	for _, r := range e.Records() {
		if r.Gov().Event == ledger.EventDenied && r.Gov().Code == string(policy.CodeProtected) {
			denied[r.Path()] = true
		}
	}
	for _, p := range []string{".intentignore", ".git/commondir", ".git/objects/info/alternates", ".git/info/exclude", "sub/.git/hooks/post-checkout"} {
		if !denied[p] {
			t.Errorf("no PROTECTED_PATH denial recorded for %s (denied: %v)", p, denied)
		}
	}
	// Ordinary git work in the mount still works, as the agent.
	git := "export HOME=/nonexistent; git -c user.name=agent -c user.email=agent@example.com "
	if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, git+"add main.go && "+git+"commit -qm work && "+git+"branch topic && "+git+"checkout -q topic && "+git+"-c gc.worktreePruneExpire=never gc -q && "+git+"status --short"); err != nil {
		t.Errorf("git work as uid %d: %v\n%s", testenv.AgentUID, err, out)
	}
}

// treeContents maps every path below root to its content, or to its link
// target or type. .orchestration/ is left out but for its ignore file: the
// daemon writes the rest (ledger, sidecars, kept versions).
func treeContents(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case strings.HasPrefix(rel, policy.OrchestrationDir) && rel != ".orchestration/.intentignore":
		case d.Type()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffTrees(a, b map[string]string) string {
	var d strings.Builder
	for k, v := range a {
		if w, ok := b[k]; !ok {
			d.WriteString("removed " + k + "\n")
		} else if v != w {
			d.WriteString("changed " + k + "\n")
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d.WriteString("added " + k + "\n")
		}
	}
	return d.String()
}

// rssKiB returns this process's resident set size: the daemon runs in it.
func rssKiB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestFenceLoadFiles: the daemon loads files a workspace can shape. A
// symlink, a FIFO or a device in their place must not leak, block or
// exhaust the daemon; the last valid policy stays in force.
func TestFenceLoadFiles(t *testing.T) {
	// Serial: measures this process's RSS, which parallel tests' daemons share.
	testenv.Serial(t)
	secret := filepath.Join(t.TempDir(), "root-only")
	if err := os.WriteFile(secret, []byte("ROOT-ONLY-LINE [secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(p string) error{
		"symlink to a root-only file": func(p string) error { return os.Symlink(secret, p) },
		"fifo":                        func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"symlink to /dev/zero":        func(p string) error { return os.Symlink("/dev/zero", p) },
		"oversized file": func(p string) error {
			return os.WriteFile(p, []byte(strings.Repeat("# padding\n", 1<<19)), 0o644)
		},
	}
	for _, file := range []string{".intentignore", ".orchestration/.intentignore", policy.IntentsFile} {
		for what, make := range plant {
			t.Run(strings.ReplaceAll(file, "/", "_")+" "+what, func(t *testing.T) {
				e := mountFence(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/a.go": "a\n"}, nil)
				base := rssKiB(t)
				p := filepath.Join(e.Src, file)
				os.Remove(p)
				if err := make(p); err != nil {
					t.Fatal(err)
				}
				// The reload fails and says so, promptly, without the
				// file's content.
				var reloadErr string
				deadline := time.Now().Add(5 * time.Second)
				for reloadErr == "" {
					st, ok := statusWithin(e, 2*time.Second)
					if !ok {
						t.Fatalf("status did not answer within 2s after planting a %s at %s", what, file)
					}
					reloadErr = st
					if time.Now().After(deadline) {
						t.Fatalf("no policy error reported for a %s at %s", what, file)
					}
					if grown := rssKiB(t) - base; grown > 256<<10 {
						t.Fatalf("daemon memory grew by %d MiB reading a %s at %s", grown>>10, what, file)
					}
					time.Sleep(20 * time.Millisecond)
				}
				t.Logf("status reports: %s", reloadErr)
				if strings.Contains(reloadErr, "ROOT-ONLY") {
					t.Errorf("status echoes the link target's content: %s", reloadErr)
				}
				if out, err := e.Sh("timeout 5 cat .intentfs/status"); err != nil || strings.Contains(out, "ROOT-ONLY") || !strings.Contains(out, "reload_error") {
					t.Errorf(".intentfs/status: %v\n%s", err, out)
				}
				// The last valid policy still decides.
				e.MustSh("echo b >> src/a.go")
				e.MustDeny("echo b > other.go")
				if grown := rssKiB(t) - base; grown > 256<<10 {
					t.Errorf("daemon memory grew by %d MiB", grown>>10)
				}
			})
		}
	}

	// .git/HEAD and refs are git state, writable through the mount: the
	// daemon reads them for every record's vcs revision.
	t.Run("git HEAD", func(t *testing.T) {
		e := mountFence(t, testenv.ScopePolicy, "INT-002", map[string]string{"a.go": "a\n"}, func(src string) {
			if out, err := exec.Command("git", "init", "-q", src).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
			testenv.ChownTree(t, src)
		})
		base := rssKiB(t)
		// Through the mount, git's refs are written only by renaming a
		// lock file over them (the commit-time check judges that): the
		// agent cannot make HEAD a link or a ref a FIFO there.
		for _, attack := range []string{"rm .git/HEAD && ln -s /dev/zero .git/HEAD", "mkfifo .git/refs/heads/x"} {
			if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, attack); err == nil || !strings.Contains(out, "Permission denied") {
				t.Errorf("%s: want Permission denied, got %v\n%s", attack, err, out)
			}
		}
		// Someone else can, in the source: the daemon's reading of them
		// must still be safe.
		head := filepath.Join(e.Src, ".git", "HEAD")
		os.Remove(head)
		if err := os.Symlink("/dev/zero", head); err != nil {
			t.Fatal(err)
		}
		if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "echo b >> a.go"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		e.WaitRecord("write with HEAD -> /dev/zero", testenv.Event(ledger.EventWrite, "a.go"))
		os.Remove(head)
		testenv.WriteFile(t, head, "ref: refs/heads/x\n")
		if err := syscall.Mkfifo(filepath.Join(e.Src, ".git", "refs", "heads", "x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := e.ShAs(testenv.AgentUID, testenv.AgentGID, "echo c > b.go"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		e.WaitRecord("create with the branch ref a FIFO", testenv.Event(ledger.EventCreate, "b.go"))
		if grown := rssKiB(t) - base; grown > 256<<10 {
			t.Errorf("daemon memory grew by %d MiB", grown>>10)
		}
	})
}

// statusWithin returns the policy reload error from status, or false if
// status did not answer in time.
func statusWithin(e *testenv.Env, d time.Duration) (string, bool) {
	ch := make(chan string, 1)
	go func() { ch <- e.D.Status().Policy.ReloadError }()
	select {
	case s := <-ch:
		return s, true
	case <-time.After(d):
		return "", false
	}
}

// TestFenceControlDir: .intentfs/ is the agent's interface to intentfs
// for the whole mount: nobody can remove or rename it or its files.
func TestFenceControlDir(t *testing.T) {
	testenv.Parallel(t)
	e := mountFence(t, testenv.ScopePolicy, "INT-002", map[string]string{"a.txt": "a\n"}, nil)
	const want = "README.md active check context denials intents lesson mutation_class pending request status"
	list := func() string {
		return strings.TrimSpace(strings.ReplaceAll(e.MustSh("ls .intentfs | LC_ALL=C sort"), "\n", " "))
	}
	attacks := []string{
		"rm -rf .intentfs",
		"rm -f .intentfs/active",
		"rm -f .intentfs/README.md",
		"mv .intentfs/status .intentfs/status2",
		"mv .intentfs/active a2.txt",
		"mv .intentfs old-intentfs",
		"rmdir .intentfs",
		"chmod 000 .intentfs",
		"chmod 000 .intentfs/active",
		"ln .intentfs/status s.txt",
		"mkdir .intentfs/d",
		"ln -s x .intentfs/l",
		"mv a.txt .intentfs/status",
	}
	for _, who := range []struct {
		name string
		run  func(string) (string, error)
	}{
		{"root", e.Sh},
		{"uid 1000", func(s string) (string, error) { return e.ShAs(testenv.AgentUID, testenv.AgentGID, s) }},
	} {
		for _, script := range attacks {
			if out, err := who.run(script); err == nil {
				t.Errorf("as %s, %q succeeded: %s", who.name, script, out)
			}
			if got := list(); got != want {
				t.Fatalf("after %q as %s, .intentfs lists %q, want %q", script, who.name, got, want)
			}
		}
	}
	if out := e.MustSh("cat .intentfs/active"); out != "INT-002\n" {
		t.Errorf("active = %q", out)
	}
	e.MustSh("echo none > .intentfs/active")
	if out := e.MustSh("cat .intentfs/active"); out != "none\n" {
		t.Errorf("active after select = %q", out)
	}
	if _, err := os.Stat(filepath.Join(e.Src, "a2.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a control file was moved into the source: %v", err)
	}
}
