package fsnode_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/rawfs"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// These tests drive the cached data path: the kernel has been told OPEN
// is not supported, so it reads and writes existing files with handle 0
// and the daemon decides each process's first write itself.

// pidGovernor is a fakeGovernor whose intent in force depends on the
// process, as sessions make it.
type pidGovernor struct {
	*fakeGovernor
	byPid map[uint32]string // guarded by fakeGovernor.mu
}

func (g *pidGovernor) ActorOf(c *fuse.Caller) fsnode.Actor {
	g.mu.Lock()
	defer g.mu.Unlock()
	if id, ok := g.byPid[c.Pid]; ok {
		return fsnode.Actor{Intent: id}
	}
	return fsnode.Actor{Intent: g.intent}
}

func (g *pidGovernor) setPidIntent(pid uint32, id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.byPid[pid] = id
}

// cachedKernel is a kernel on the cached data path.
type cachedKernel struct {
	*kernel
	pids   *pidGovernor
	elider *fsnode.OpenElider
	store  *objects.Store
}

func newCachedKernel(t *testing.T, files map[string]string) *cachedKernel {
	t.Helper()
	return newCachedKernelDirs(t, files, 16)
}

// newCachedKernelDirs is newCachedKernel with at most maxDirs descriptors
// held by nodes (directories and the cached path's read descriptors).
func newCachedKernelDirs(t *testing.T, files map[string]string, maxDirs int) *cachedKernel {
	t.Helper()
	src := t.TempDir()
	for p, c := range files {
		full := filepath.Join(src, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, _, err := policy.ParseIntents("p.yaml", []byte(rawPolicy))
	if err != nil {
		t.Fatal(err)
	}
	gov := &pidGovernor{fakeGovernor: &fakeGovernor{snap: &policy.Snapshot{Intents: in}, intent: "INT-001"}, byPid: map[uint32]string{}}
	store := objects.New(t.TempDir())
	root, err := fsnode.NewRoot(fsnode.Options{Source: src, Governor: gov, Log: slog.New(slog.DiscardHandler),
		Objects: store, KeepMaxBytes: 1 << 20, MaxHandlesPerUID: 64, MaxCachedDirs: maxDirs, DataPath: fsnode.DataPathCached})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	// Records come when a test settles them, never from the debounce
	// racing a loaded machine; TestCachedWriteSettlesWhenQuiet sets it
	// back.
	root.SetCachedWriteQuiet(time.Hour)
	// The daemon's stack on the cached data path.
	elider := fsnode.ElideOpen(rawfs.ElideOpendir(root.CallerScope(fs.NewNodeFS(root.Node(), &fs.Options{NullPermissions: true}))), root)
	elider.SetEliding(true)
	ops := rawfs.CountOps(elider)
	k := &kernel{t: t, src: src, gov: gov.fakeGovernor, root: root, raw: ops, ops: ops,
		caller: fuse.Caller{Owner: fuse.Owner{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, Pid: uint32(os.Getpid())},
		nodes:  map[string]uint64{"": fuse.FUSE_ROOT_ID}}
	return &cachedKernel{kernel: k, pids: gov, elider: elider, store: store}
}

// as is the header of a request by process pid of the kernel's caller.
func (k *cachedKernel) as(node uint64, pid uint32) fuse.InHeader {
	h := k.header(node)
	h.Pid = pid
	return h
}

// writeAt writes data at off into rel with handle 0, as process pid.
func (k *cachedKernel) writeAt(rel string, pid uint32, data string, off uint64) fuse.Status {
	k.t.Helper()
	id, st := k.node(rel)
	if st != fuse.OK {
		return st
	}
	in := fuse.WriteIn{InHeader: k.as(id, pid), Offset: off, Size: uint32(len(data))}
	n, st := k.raw.Write(nil, &in, []byte(data))
	if st == fuse.OK && int(n) != len(data) {
		return fuse.EIO
	}
	return st
}

// readAt reads rel with handle 0.
func (k *cachedKernel) readAt(rel string) (string, fuse.Status) {
	id, st := k.node(rel)
	if st != fuse.OK {
		return "", st
	}
	buf := make([]byte, 1<<12)
	r, st := k.raw.Read(nil, &fuse.ReadIn{InHeader: k.header(id), Size: uint32(len(buf))}, buf)
	if st != fuse.OK {
		return "", st
	}
	b, st := r.Bytes(buf)
	r.Done()
	return string(b), st
}

// waitRecords polls until n records have come, or fails.
func (k *cachedKernel) waitRecords(n int) []ledger.Change {
	k.t.Helper()
	var got []ledger.Change
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		recs, _ := k.gov.take()
		got = append(got, recs...)
		if len(got) >= n {
			return got
		}
	}
	k.t.Fatalf("%d records after 10s, want %d: %v", len(got), n, summary(got))
	return nil
}

func TestParseDataPath(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"", fsnode.DataPathPassthrough, true},
		{"passthrough", fsnode.DataPathPassthrough, true},
		{"cached", fsnode.DataPathCached, true},
		{"Cached", "", false},
		{"direct", "", false},
	}
	for _, tt := range tests {
		got, err := fsnode.ParseDataPath(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseDataPath(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestCachedOpenAndFlushDeclined: a kernel that can open without OPEN is
// told OPEN and FLUSH are not supported; one that cannot gets handles as
// on the passthrough path. After the first declined OPEN, a created file
// gets no handle (the kernel would never release it): its writes go
// through the daemon's writer and are recorded as one creation.
func TestCachedOpenAndFlushDeclined(t *testing.T) {
	for _, eliding := range []bool{true, false} {
		k := newCachedKernel(t, map[string]string{"src/a.go": "package a\n"})
		k.elider.SetEliding(eliding)
		if k.elider.Eliding() != eliding {
			t.Fatalf("Eliding() = %v, want %v", k.elider.Eliding(), eliding)
		}
		id := k.mustNode("src/a.go")
		var oo fuse.OpenOut
		st := k.raw.Open(nil, &fuse.OpenIn{InHeader: k.header(id), Flags: uint32(os.O_RDONLY)}, &oo)
		fst := k.raw.Flush(nil, &fuse.FlushIn{InHeader: k.header(id), Fh: oo.Fh})
		if eliding && (st != fuse.ENOSYS || fst != fuse.ENOSYS) {
			t.Fatalf("eliding: open %v, flush %v; want ENOSYS for both", st, fst)
		}
		if !eliding {
			if st != fuse.OK || oo.Fh == 0 || fst != fuse.OK {
				t.Fatalf("not eliding: open %v (fh %d), flush %v; want a handle", st, oo.Fh, fst)
			}
			k.release(id, oo.Fh)
		}

		parent := k.mustNode("src")
		var co fuse.CreateOut
		in := fuse.CreateIn{InHeader: k.header(parent), Flags: uint32(os.O_WRONLY | os.O_CREATE | os.O_EXCL), Mode: 0o644}
		if st := k.raw.Create(nil, &in, "new.go", &co); st != fuse.OK {
			t.Fatalf("create: %v", st)
		}
		k.nodes["src/new.go"] = co.NodeId
		if eliding != (co.Fh == 0) {
			t.Fatalf("eliding %v: created file's handle %d", eliding, co.Fh)
		}
		w := fuse.WriteIn{InHeader: k.header(co.NodeId), Fh: co.Fh, Size: 12}
		if _, st := k.raw.Write(nil, &w, []byte("package new\n")); st != fuse.OK {
			t.Fatalf("writing the created file: %v", st)
		}
		if co.Fh != 0 {
			k.release(co.NodeId, co.Fh)
		}
		k.root.SettleWrites()
		recs, denials := k.gov.take()
		if got := summary(recs); !slices.Equal(got, []string{"create src/new.go"}) || len(denials) != 0 {
			t.Fatalf("eliding %v: records %v, denials %v; want one creation", eliding, got, denials)
		}
		if recs[0].PostHash != sha("package new\n") {
			t.Errorf("eliding %v: the creation's post hash %s, want the content written", eliding, recs[0].PostHash)
		}
		if got, _ := k.onDisk("src/new.go"); got != "package new\n" {
			t.Errorf("src/new.go on the source: %q", got)
		}
	}
}

// TestCachedWriteDecided: a process's first write with handle 0 is
// decided as an OPEN for writing would be. Outside the scope it is
// refused with a denial and the source is untouched; inside, the version
// it replaces is kept before the first byte changes, and one record with
// the hashes before and after comes once the writes settle.
func TestCachedWriteDecided(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		intent string
		want   fuse.Status
		code   policy.Code // of the denial, when refused
	}{
		{"in scope", "src/a.go", "INT-001", fuse.OK, ""},
		{"out of scope", "README.md", "INT-001", fuse.EACCES, policy.CodeOutOfScope},
		{"the policy file", policy.IntentsFile, "INT-002", fuse.EACCES, ""},
		{"no intent", "src/a.go", "", fuse.EACCES, policy.CodeNoIntent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := "old content\n"
			k := newCachedKernel(t, map[string]string{tt.path: old})
			k.gov.setIntent(tt.intent)
			pid := k.caller.Pid
			if st := k.writeAt(tt.path, pid, "NEW", 0); st != tt.want {
				t.Fatalf("first write: %v, want %v", st, tt.want)
			}
			if tt.want != fuse.OK {
				recs, denials := k.gov.take()
				if len(recs) != 0 || len(denials) != 1 || denials[0].Allow || denials[0].Reason == "" || (tt.code != "" && denials[0].Code != tt.code) {
					t.Fatalf("records %v, denials %+v; want one denial %s with a reason", summary(recs), denials, tt.code)
				}
				if got, _ := k.onDisk(tt.path); got != old {
					t.Fatalf("%s on the source after a refused write: %q", tt.path, got)
				}
				if n := k.root.PendingCachedWriters(); n != 0 {
					t.Fatalf("a refused write left %d writers", n)
				}
				return
			}
			// The version being replaced is in the store already.
			if b, err := k.store.Read(sha(old)); err != nil || string(b) != old {
				t.Fatalf("the pre-image after the first write: %q, %v", b, err)
			}
			if st := k.writeAt(tt.path, pid, "!", 11); st != fuse.OK {
				t.Fatalf("second write: %v", st)
			}
			k.root.SettleWrites()
			recs, denials := k.gov.take()
			if got := summary(recs); !slices.Equal(got, []string{"write " + tt.path}) || len(denials) != 0 {
				t.Fatalf("records %v, denials %+v; want one write", got, denials)
			}
			want := "NEW content!"
			r := recs[0]
			if r.PreHash != sha(old) || r.PostHash != sha(want) || r.PreImage != "stored" || r.Intent != tt.intent || r.Process == nil || r.Process.Pid != pid {
				t.Fatalf("record %+v: want pre %s, post %s, stored, %s, pid %d", r, sha(old), sha(want), tt.intent, pid)
			}
			if got, _ := k.onDisk(tt.path); got != want {
				t.Fatalf("%s on the source: %q, want %q", tt.path, got, want)
			}
			if got, st := k.readAt(tt.path); st != fuse.OK || got != want {
				t.Fatalf("reading back with handle 0: %q %v", got, st)
			}
		})
	}
}

// TestCachedWriteSettlesWhenQuiet: without anyone asking, the writes of
// an inode are recorded once they pause, and the writer is let go.
func TestCachedWriteSettlesWhenQuiet(t *testing.T) {
	k := newCachedKernel(t, map[string]string{"src/a.go": "package a\n"})
	k.root.SetCachedWriteQuiet(200 * time.Millisecond)
	if st := k.writeAt("src/a.go", k.caller.Pid, "package b\n", 0); st != fuse.OK {
		t.Fatal(st)
	}
	recs := k.waitRecords(1)
	if got := summary(recs); !slices.Equal(got, []string{"write src/a.go"}) || recs[0].PostHash != sha("package b\n") {
		t.Fatalf("records %v (%+v)", got, recs)
	}
	if n := k.root.PendingCachedWriters(); n != 0 {
		t.Fatalf("%d writers left after their writes settled", n)
	}
}

// TestCachedWriteOtherProcess: a write by another process, or by the
// same one under another intent, is decided for it: the writer before it
// is recorded under its own process and intent first, and a process
// without an intent is refused even on a file another is writing.
func TestCachedWriteOtherProcess(t *testing.T) {
	k := newCachedKernel(t, map[string]string{"src/a.go": "0000\n"})
	const agentA, agentB = 1001, 1002
	k.pids.setPidIntent(agentA, "INT-001")
	k.pids.setPidIntent(agentB, "")
	steps := []struct {
		name    string
		pid     uint32
		intent  string // set for pid before the write
		off     uint64
		want    fuse.Status
		records []string // "intent pid" of the records made by the step
		denied  policy.Code
	}{
		{"A writes", agentA, "INT-001", 0, fuse.OK, nil, ""},
		{"B without an intent", agentB, "", 1, fuse.EACCES, []string{"INT-001 1001"}, policy.CodeNoIntent},
		{"A again", agentA, "INT-001", 1, fuse.OK, nil, ""},
		{"A under another intent", agentA, "INT-002", 2, fuse.OK, []string{"INT-001 1001"}, ""},
		{"B with an intent", agentB, "INT-001", 3, fuse.OK, []string{"INT-002 1001"}, ""},
	}
	for _, s := range steps {
		k.pids.setPidIntent(s.pid, s.intent)
		if st := k.writeAt("src/a.go", s.pid, "x", s.off); st != s.want {
			t.Fatalf("%s: %v, want %v", s.name, st, s.want)
		}
		recs, denials := k.gov.take()
		var got []string
		for _, r := range recs {
			got = append(got, r.Intent+" "+itoa(r.Process.Pid))
		}
		if !slices.Equal(got, s.records) {
			t.Fatalf("%s: records %v, want %v", s.name, got, s.records)
		}
		if (s.denied == "") != (len(denials) == 0) || (s.denied != "" && denials[0].Code != s.denied) {
			t.Fatalf("%s: denials %+v, want %q", s.name, denials, s.denied)
		}
	}
	k.root.SettleWrites()
	recs, _ := k.gov.take()
	if len(recs) != 1 || recs[0].Intent != "INT-001" || recs[0].Process.Pid != agentB || recs[0].PostHash != sha("xxxx\n") {
		t.Fatalf("B's settled record: %+v", recs)
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// TestCachedWriteWithoutCaller: a write that comes without a process
// (the writeback of a shared writable mapping) cannot be decided, and is
// refused.
func TestCachedWriteWithoutCaller(t *testing.T) {
	k := newCachedKernel(t, map[string]string{"src/a.go": "package a\n"})
	if st := k.writeAt("src/a.go", 0, "pwned", 0); st != fuse.EACCES {
		t.Fatalf("a write without a caller: %v, want EACCES", st)
	}
	if got, _ := k.onDisk("src/a.go"); got != "package a\n" {
		t.Fatalf("src/a.go: %q", got)
	}
}

// TestCachedWriteCallerCredentials: the writer is opened as the process
// that writes, so the cached path gives no more than the source does.
func TestCachedWriteCallerCredentials(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("taking on another user's credentials needs root")
	}
	k := newCachedKernel(t, map[string]string{"src/root-only.go": "secret\n", "src/shared.go": "shared\n"})
	if err := os.Chmod(filepath.Join(k.src, "src/root-only.go"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(k.src, "src/shared.go"), 0o666); err != nil {
		t.Fatal(err)
	}
	k.caller = fuse.Caller{Owner: fuse.Owner{Uid: 1000, Gid: 1000}, Pid: 4242}
	if st := k.writeAt("src/root-only.go", 4242, "pwned\n", 0); st != fuse.EACCES {
		t.Fatalf("uid 1000 writing a root-only file: %v", st)
	}
	if got, _ := k.onDisk("src/root-only.go"); got != "secret\n" {
		t.Fatalf("src/root-only.go: %q", got)
	}
	if st := k.writeAt("src/shared.go", 4242, "SHARED\n", 0); st != fuse.OK {
		t.Fatalf("uid 1000 writing a world-writable file: %v", st)
	}
	k.root.SettleWrites()
	if recs, _ := k.gov.take(); len(recs) != 1 || recs[0].Process.Uid != 1000 {
		t.Fatalf("records %+v", recs)
	}
}

// TestCachedSetattrDecided: a truncate or chmod of a file the kernel
// opened without OPEN is decided; the writes pending on it are recorded
// before the truncation's record, which keeps what it cut.
func TestCachedSetattrDecided(t *testing.T) {
	k := newCachedKernel(t, map[string]string{"src/a.go": "package a\n", "README.md": "# p\n"})
	if st := k.truncate("README.md", 0); st != fuse.EACCES {
		t.Fatalf("truncating outside the scope: %v", st)
	}
	if st := k.chmod("README.md", 0o777); st != fuse.EACCES {
		t.Fatalf("chmod outside the scope: %v", st)
	}
	if recs, denials := k.gov.take(); len(recs) != 0 || len(denials) != 2 {
		t.Fatalf("records %v, denials %+v; want two denials", summary(recs), denials)
	}
	if got, _ := k.onDisk("README.md"); got != "# p\n" {
		t.Fatalf("README.md: %q", got)
	}

	if st := k.writeAt("src/a.go", k.caller.Pid, "package b\n", 0); st != fuse.OK {
		t.Fatal(st)
	}
	if st := k.truncate("src/a.go", 7); st != fuse.OK {
		t.Fatalf("truncate in the scope: %v", st)
	}
	k.root.SettleWrites()
	recs, denials := k.gov.take()
	if len(denials) != 0 || len(recs) < 2 {
		t.Fatalf("records %v, denials %+v", summary(recs), denials)
	}
	w, tr := recs[0], recs[len(recs)-1]
	if w.Event != ledger.EventWrite || w.PreHash != sha("package a\n") || w.PostHash != sha("package b\n") {
		t.Errorf("the pending write's record %+v", w)
	}
	// The truncation goes through a writer of its own, as an O_TRUNC
	// open's: recorded as the change it and any writes after it make.
	if tr.Event != ledger.EventWrite || tr.PreHash != sha("package b\n") || tr.PostHash != sha("package") || tr.PreImage != "stored" {
		t.Errorf("the truncate's record %+v: want pre %s", tr, sha("package b\n"))
	}
	if b, err := k.store.Read(sha("package b\n")); err != nil || string(b) != "package b\n" {
		t.Errorf("what the truncate cut was not kept: %q %v", b, err)
	}
	if got, _ := k.onDisk("src/a.go"); got != "package" {
		t.Fatalf("src/a.go: %q", got)
	}
}

// TestCachedReadHeldDescriptor: a read with handle 0 goes through a
// descriptor the daemon opens on the node's own inode: the source's
// bytes, never those of a file put at the name behind the mount, and
// never through a symlink.
func TestCachedReadHeldDescriptor(t *testing.T) {
	tests := []struct {
		name    string
		maxDirs int // descriptors nodes may hold: 0 opens one per read
		replace func(t *testing.T, path string)
		want    string
		status  fuse.Status
	}{
		{"held", 16, nil, "package a\n", fuse.OK},
		{"per read", 0, nil, "package a\n", fuse.OK},
		{"replaced by another file", 16, func(t *testing.T, path string) {
			if err := os.WriteFile(path+".new", []byte("other\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		}, "", fuse.Status(syscall.ESTALE)},
		{"replaced by a symlink", 16, func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/etc/passwd", path); err != nil {
				t.Fatal(err)
			}
		}, "", fuse.Status(syscall.ELOOP)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newCachedKernelDirs(t, map[string]string{"src/a.go": "package a\n"}, tt.maxDirs)
			k.mustNode("src/a.go")
			if tt.replace != nil {
				tt.replace(t, filepath.Join(k.src, "src/a.go"))
			}
			got, st := k.readAt("src/a.go")
			if got != tt.want || st != tt.status {
				t.Fatalf("read: %q %v; want %q %v", got, st, tt.want, tt.status)
			}
			if tt.replace != nil {
				// Its attributes are no other file's either: the kernel
				// checks the caller's access against them.
				var ao fuse.AttrOut
				st := k.raw.GetAttr(nil, &fuse.GetAttrIn{InHeader: k.header(k.mustNode("src/a.go"))}, &ao)
				if st == fuse.OK {
					t.Fatalf("getattr of a replaced file: %+v", ao.Attr)
				}
				return
			}
			// Read again, then fsync with handle 0: through the daemon's
			// descriptor, not a silent no-op.
			if got, st := k.readAt("src/a.go"); st != fuse.OK || got != tt.want {
				t.Fatalf("second read: %q %v", got, st)
			}
			if st := k.raw.Fsync(nil, &fuse.FsyncIn{InHeader: k.header(k.mustNode("src/a.go"))}); st != fuse.OK {
				t.Fatalf("fsync with handle 0: %v", st)
			}
		})
	}
}

// TestCachedReadKeepsInode: once the daemon holds the node's read
// descriptor, a file replaced behind the mount does not change what the
// node reads or the attributes it reports: both stay the node's inode.
func TestCachedReadKeepsInode(t *testing.T) {
	k := newCachedKernel(t, map[string]string{"src/a.go": "package a\n"})
	if got, st := k.readAt("src/a.go"); st != fuse.OK || got != "package a\n" {
		t.Fatalf("read: %q %v", got, st)
	}
	path := filepath.Join(k.src, "src/a.go")
	if err := os.WriteFile(path+".new", []byte("a much longer other file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if got, st := k.readAt("src/a.go"); st != fuse.OK || got != "package a\n" {
		t.Fatalf("read after the replacement: %q %v; want the node's own bytes", got, st)
	}
	var ao fuse.AttrOut
	if st := k.raw.GetAttr(nil, &fuse.GetAttrIn{InHeader: k.header(k.mustNode("src/a.go"))}, &ao); st != fuse.OK || ao.Size != uint64(len("package a\n")) {
		t.Fatalf("getattr after the replacement: %v size %d; want the node's own", st, ao.Size)
	}
}

// TestCachedWritersBounded: the daemon keeps at most one writer per
// inode whoever writes it, and none once the writes are recorded.
func TestCachedWritersBounded(t *testing.T) {
	files := map[string]string{}
	for i := range 20 {
		files["src/f"+itoa(uint32(i))+".go"] = "x\n"
	}
	k := newCachedKernel(t, files)
	for p := range 50 {
		if st := k.writeAt("src/f0.go", uint32(2000+p), string(rune('a'+p%26)), 0); st != fuse.OK {
			t.Fatalf("pid %d: %v", 2000+p, st)
		}
		if n := k.root.PendingCachedWriters(); n != 1 {
			t.Fatalf("after %d processes wrote one file: %d writers", p+1, n)
		}
	}
	if recs, _ := k.gov.take(); len(recs) != 49 {
		t.Fatalf("%d records for 50 processes taking turns, want 49 (each turn ends the one before)", len(recs))
	}
	for i := range 20 {
		if st := k.writeAt("src/f"+itoa(uint32(i))+".go", 3000, "z", 1); st != fuse.OK {
			t.Fatal(st)
		}
	}
	if n := k.root.PendingCachedWriters(); n != 20 {
		t.Fatalf("one process writing 20 files: %d writers, want 20", n)
	}
	if recs, _ := k.gov.take(); len(recs) != 1 || recs[0].Process.Pid != 2049 {
		t.Fatalf("records %+v, want the last process's on src/f0.go, ended by the new writer", recs)
	}
	k.root.SettleWrites()
	if n := k.root.PendingCachedWriters(); n != 0 {
		t.Fatalf("%d writers after settling", n)
	}
	if recs, _ := k.gov.take(); len(recs) != 20 {
		t.Fatalf("%d records after settling 20 files", len(recs))
	}
}

// TestCachedAllocateAndCopy: fallocate and copy_file_range with handle 0
// are decided and go through the destination's writer.
func TestCachedAllocateAndCopy(t *testing.T) {
	k := newCachedKernel(t, map[string]string{"src/a.go": "package a\n", "src/b.go": "", "README.md": "# p\n"})
	readme := k.mustNode("README.md")
	if st := k.raw.Fallocate(nil, &fuse.FallocateIn{InHeader: k.header(readme), Length: 4096}); st != fuse.EACCES {
		t.Fatalf("fallocate outside the scope: %v", st)
	}
	a, b := k.mustNode("src/a.go"), k.mustNode("src/b.go")
	if _, st := k.raw.CopyFileRange(nil, &fuse.CopyFileRangeIn{InHeader: k.header(a), NodeIdOut: readme, Len: 10}); st != fuse.EACCES {
		t.Fatalf("copy_file_range into a file outside the scope: %v", st)
	}
	if recs, denials := k.gov.take(); len(recs) != 0 || len(denials) != 2 {
		t.Fatalf("records %v, denials %+v", summary(recs), denials)
	}
	if n, st := k.raw.CopyFileRange(nil, &fuse.CopyFileRangeIn{InHeader: k.header(a), NodeIdOut: b, Len: 10}); st != fuse.OK || n != 10 {
		t.Fatalf("copy_file_range: %d %v", n, st)
	}
	if st := k.raw.Fallocate(nil, &fuse.FallocateIn{InHeader: k.header(a), Length: 4096}); st != fuse.OK {
		t.Fatalf("fallocate: %v", st)
	}
	k.root.SettleWrites()
	recs, _ := k.gov.take()
	got := summary(recs)
	slices.Sort(got)
	if !slices.Equal(got, []string{"write src/a.go", "write src/b.go"}) {
		t.Fatalf("records %v", got)
	}
	if s, _ := k.onDisk("src/b.go"); s != "package a\n" {
		t.Fatalf("src/b.go: %q", s)
	}
	if got, _ := k.onDisk("README.md"); got != "# p\n" {
		t.Fatalf("README.md: %q", got)
	}
}
