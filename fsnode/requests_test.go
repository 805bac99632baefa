package fsnode_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/internal/gitchange"
	"github.com/intentfs/intentfs/policy"
)

// TestOtherRequests: the requests beyond create, write and rename reach
// the source as the caller, and those that change it are decided and
// recorded.
func TestOtherRequests(t *testing.T) {
	k := newKernel(t, map[string]string{"src/a.go": "package a\n", "README.md": "# p\n"})
	if err := os.Symlink("a.go", filepath.Join(k.src, "src/link")); err != nil {
		t.Fatal(err)
	}
	h := k.header(k.mustNode("src/link"))
	if target, st := k.raw.Readlink(nil, &h); st != fuse.OK || string(target) != "a.go" {
		t.Fatalf("readlink: %q %v", target, st)
	}
	root := k.header(fuse.FUSE_ROOT_ID)
	var sfs fuse.StatfsOut
	if st := k.raw.StatFs(nil, &root, &sfs); st != fuse.OK || sfs.Bsize == 0 {
		t.Fatalf("statfs: %v %+v", st, sfs)
	}

	// Extended attributes: set, read, list, remove; recorded as changes.
	if st := k.setxattr("src/a.go", "user.note", "hi"); st != fuse.OK {
		t.Fatalf("setxattr: %v", st)
	}
	a := k.header(k.mustNode("src/a.go"))
	buf := make([]byte, 64)
	if n, st := k.raw.GetXAttr(nil, &a, "user.note", buf); st != fuse.OK || string(buf[:n]) != "hi" {
		t.Fatalf("getxattr: %q %v", buf[:n], st)
	}
	if n, st := k.raw.ListXAttr(nil, &a, buf); st != fuse.OK || !strings.Contains(string(buf[:n]), "user.note\x00") {
		t.Fatalf("listxattr: %q %v", buf[:n], st)
	}
	if st := k.raw.RemoveXAttr(nil, &a, "user.note"); st != fuse.OK {
		t.Fatalf("removexattr: %v", st)
	}
	if _, st := k.raw.GetXAttr(nil, &a, "user.note", buf); st != fuse.Status(syscall.ENODATA) {
		t.Fatalf("getxattr after its removal: %v", st)
	}
	readme := k.header(k.mustNode("README.md"))
	if st := k.raw.RemoveXAttr(nil, &readme, "user.note"); st != fuse.EACCES {
		t.Fatalf("removexattr outside the scope: %v", st)
	}

	// A fifo in the scope.
	parent := k.header(k.mustNode("src"))
	var eo fuse.EntryOut
	if st := k.raw.Mknod(nil, &fuse.MknodIn{InHeader: parent, Mode: syscall.S_IFIFO | 0o644}, "pipe", &eo); st != fuse.OK {
		t.Fatalf("mknod: %v", st)
	}
	if fi, err := os.Lstat(filepath.Join(k.src, "src/pipe")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("src/pipe on the source: %v %v", fi, err)
	}

	// Handles: fallocate, copy_file_range, lseek, flush, fsync.
	id := k.mustNode("src/a.go")
	var oo fuse.OpenOut
	if st := k.raw.Open(nil, &fuse.OpenIn{InHeader: k.header(id), Flags: uint32(os.O_RDWR)}, &oo); st != fuse.OK {
		t.Fatal(st)
	}
	if st := k.raw.Fallocate(nil, &fuse.FallocateIn{InHeader: k.header(id), Fh: oo.Fh, Offset: 0, Length: 4096}); st != fuse.OK {
		t.Fatalf("fallocate: %v", st)
	}
	var lo fuse.LseekOut
	if st := k.raw.Lseek(nil, &fuse.LseekIn{InHeader: k.header(id), Fh: oo.Fh, Offset: 0, Whence: 3 /* SEEK_DATA */}, &lo); st != fuse.OK || lo.Offset != 0 {
		t.Fatalf("lseek: %v %+v", st, lo)
	}
	if st := k.raw.Flush(nil, &fuse.FlushIn{InHeader: k.header(id), Fh: oo.Fh}); st != fuse.OK {
		t.Fatalf("flush: %v", st)
	}
	if st := k.raw.Fsync(nil, &fuse.FsyncIn{InHeader: k.header(id), Fh: oo.Fh}); st != fuse.OK {
		t.Fatalf("fsync: %v", st)
	}
	if st := k.create("src/b.go", ""); st != fuse.OK {
		t.Fatal(st)
	}
	bid := k.mustNode("src/b.go")
	var bo fuse.OpenOut
	if st := k.raw.Open(nil, &fuse.OpenIn{InHeader: k.header(bid), Flags: uint32(os.O_WRONLY)}, &bo); st != fuse.OK {
		t.Fatal(st)
	}
	n, st := k.raw.CopyFileRange(nil, &fuse.CopyFileRangeIn{InHeader: k.header(id), FhIn: oo.Fh, NodeIdOut: bid, FhOut: bo.Fh, Len: 10})
	if st != fuse.OK || n != 10 {
		t.Fatalf("copy_file_range: %d %v", n, st)
	}
	k.release(bid, bo.Fh)
	k.release(id, oo.Fh)
	if got, _ := k.onDisk("src/b.go"); got != "package a\n" {
		t.Fatalf("src/b.go after copy_file_range: %q", got)
	}
	if fi, err := os.Stat(filepath.Join(k.src, "src/a.go")); err != nil || fi.Size() != 4096 {
		t.Fatalf("src/a.go after fallocate: %v %v", fi, err)
	}

	recs, denials := k.gov.take()
	var events []string
	for _, r := range recs {
		events = append(events, string(r.Event)+" "+r.Path)
	}
	for _, want := range []string{"xattr src/a.go", "mknod src/pipe", "create src/b.go", "write src/b.go", "write src/a.go"} {
		if !slices.Contains(events, want) {
			t.Errorf("no %q among the records %v", want, events)
		}
	}
	if len(denials) != 1 || denials[0].Code != policy.CodeOutOfScope {
		t.Errorf("denials %+v, want the removexattr on README.md", denials)
	}

	// Every request went through the counter, by opcode.
	c := k.ops.Counts()
	for _, op := range []string{"LOOKUP", "CREATE", "OPEN", "RELEASE", "SETXATTR", "GETXATTR", "LISTXATTR", "REMOVEXATTR", "MKNOD", "READLINK", "STATFS", "FALLOCATE", "COPYFILERANGE", "LSEEK", "FLUSH", "FSYNC"} {
		if c[op] == 0 {
			t.Errorf("no %s counted: %v", op, c)
		}
	}
}

// TestIoctls: only the reviewed read-only ioctls reach the source.
func TestIoctls(t *testing.T) {
	k := newKernel(t, map[string]string{"src/a.go": "package a\n"})
	id := k.mustNode("src/a.go")
	var oo fuse.OpenOut
	if st := k.raw.Open(nil, &fuse.OpenIn{InHeader: k.header(id), Flags: uint32(os.O_RDONLY)}, &oo); st != fuse.OK {
		t.Fatal(st)
	}
	defer k.release(id, oo.Fh)
	out := make([]byte, 32)
	var io fuse.IoctlOut
	const fsIocGetflags, fsIocSetflags = 0x80086601, 0x40086602
	st := k.raw.Ioctl(nil, &fuse.IoctlIn{InHeader: k.header(id), Fh: oo.Fh, Cmd: fsIocGetflags}, nil, &io, out)
	if st != fuse.OK && st != fuse.Status(syscall.ENOTTY) && st != fuse.Status(syscall.EOPNOTSUPP) {
		t.Fatalf("FS_IOC_GETFLAGS: %v", st)
	}
	if st := k.raw.Ioctl(nil, &fuse.IoctlIn{InHeader: k.header(id), Fh: oo.Fh, Cmd: fsIocSetflags}, out[:4], &io, nil); st != fuse.Status(syscall.ENOTTY) {
		t.Fatalf("FS_IOC_SETFLAGS, which would set chattr flags: %v, want ENOTTY", st)
	}
}

// TestDirectoryMoveUnderAGlobScope: under a scope that is not a plain
// prefix, a directory moves only if everything below it is in the scope.
func TestDirectoryMoveUnderAGlobScope(t *testing.T) {
	const pol = `active_intents:
  - id: INT-001
    name: underscore-free
    status: IN_PROGRESS
    owned_scope: ["a/**/[!_]*"]
`
	k := newKernelWith(t, pol, map[string]string{"a/b/x.go": "x\n", "a/b/_secret": "s\n", "a/ok/y.go": "y\n", "a/ok/sub/z.go": "z\n"})
	if st := k.rename("a/b", "a/c", 0); st != fuse.EACCES {
		t.Fatalf("moving a/b, which holds a/b/_secret: %v", st)
	}
	if _, ok := k.onDisk("a/b/_secret"); !ok {
		t.Fatal("a/b/_secret moved")
	}
	if st := k.rename("a/ok", "a/moved", 0); st != fuse.OK {
		t.Fatalf("moving a/ok, all in the scope: %v", st)
	}
	if got, ok := k.onDisk("a/moved/sub/z.go"); !ok || got != "z\n" {
		t.Fatalf("a/moved/sub/z.go = %q %v", got, ok)
	}
}

// TestSetIDBitsCleared: a write by a user other than root clears the
// set-user-ID bit, as a write on the source would.
func TestSetIDBitsCleared(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("taking on another user's credentials needs root")
	}
	k := newKernel(t, map[string]string{"src/tool": "#!/bin/sh\n"})
	p := filepath.Join(k.src, "src/tool")
	if err := os.Chown(p, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o4755); err != nil {
		t.Fatal(err)
	}
	k.caller = fuse.Caller{Owner: fuse.Owner{Uid: 1000, Gid: 1000}, Pid: uint32(os.Getpid())}
	if st := k.write("src/tool", "#!/bin/sh\necho hi\n"); st != fuse.OK {
		t.Fatalf("the owner writing its file: %v", st)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode()&os.ModeSetuid != 0 {
		t.Fatalf("src/tool after a write by uid 1000: %v %v", fi.Mode(), err)
	}
}

// gitGovernor is a governor that also watches git directories: it
// refuses a rename onto refs/heads/main and runs what it returns after
// every other change there.
type gitGovernor struct {
	*fakeGovernor
	gmu     sync.Mutex
	watched []gitchange.Change
	// after lists "op path2" of the changes whose follow-up ran.
	after []string
}

func (g *gitGovernor) WatchGit(ctx context.Context, w gitchange.Change) (*policy.Decision, func()) {
	g.gmu.Lock()
	defer g.gmu.Unlock()
	g.watched = append(g.watched, w)
	if w.Req.Op == policy.OpRename && w.Req.Path2 == ".git/refs/heads/main" {
		content, err := w.Read(w.Req.Path, 1<<10)
		if err != nil || strings.TrimSpace(string(content)) != strings.Repeat("b", 40) {
			return &policy.Decision{Code: "COMMIT_NOT_ACCOUNTED", Reason: "main would move to an unchecked commit", Validation: policy.ValidationFail, Path: w.Req.Path2}, nil
		}
		if w.Judged != nil {
			w.Judged(content)
		}
	}
	req := w.Req
	return nil, func() {
		g.gmu.Lock()
		defer g.gmu.Unlock()
		g.after = append(g.after, string(req.Op)+" "+req.Path2)
	}
}

// TestGitChangesAreWatched: a change in a git directory is put to the
// governor's watcher, whose refusal stands and whose follow-up runs once
// the change is made; a ref it judged holds what it was judged from.
func TestGitChangesAreWatched(t *testing.T) {
	src := t.TempDir()
	for p, c := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/refs/heads/main": strings.Repeat("a", 40) + "\n", "src/a.go": "package a\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, _, err := policy.ParseIntents("p.yaml", []byte(rawPolicy))
	if err != nil {
		t.Fatal(err)
	}
	gov := &gitGovernor{fakeGovernor: &fakeGovernor{snap: &policy.Snapshot{Intents: in}, intent: "INT-001"}}
	k := newKernelGov(t, src, gov)

	if st := k.create(".git/refs/heads/main.lock", strings.Repeat("c", 40)+"\n"); st != fuse.OK {
		t.Fatalf("writing main.lock: %v", st)
	}
	if st := k.rename(".git/refs/heads/main.lock", ".git/refs/heads/main", 0); st != fuse.EACCES {
		t.Fatalf("moving main where the watcher refuses: %v", st)
	}
	if got, _ := k.onDisk(".git/refs/heads/main"); got != strings.Repeat("a", 40)+"\n" {
		t.Fatalf("main after the refusal: %q", got)
	}
	if st := k.write(".git/refs/heads/main.lock", strings.Repeat("b", 40)+"\n"); st != fuse.OK {
		t.Fatalf("rewriting main.lock: %v", st)
	}
	if st := k.rename(".git/refs/heads/main.lock", ".git/refs/heads/main", 0); st != fuse.OK {
		t.Fatalf("moving main where the watcher allows: %v", st)
	}
	if got, _ := k.onDisk(".git/refs/heads/main"); got != strings.Repeat("b", 40)+"\n" {
		t.Fatalf("main after the move: %q", got)
	}
	gov.gmu.Lock()
	defer gov.gmu.Unlock()
	if len(gov.watched) != 4 || !slices.Contains(gov.after, "rename .git/refs/heads/main") {
		t.Fatalf("the watcher saw %d changes, want 4, and ran the follow-ups of %v, want the allowed move of main among them", len(gov.watched), gov.after)
	}
	for _, w := range gov.watched {
		if w.Caller == nil || w.Caller.Pid != k.caller.Pid || w.Read == nil || w.Checkpoint == nil {
			t.Fatalf("a git change without its caller or reader: %+v", w)
		}
	}
	if _, denials := k.gov.take(); len(denials) != 1 || denials[0].Code != "COMMIT_NOT_ACCOUNTED" {
		t.Fatalf("denials %+v, want the watcher's refusal", denials)
	}
}
