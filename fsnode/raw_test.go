package fsnode_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/fsnode"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/rawfs"
	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// These tests drive the filesystem the way the kernel does, with raw
// FUSE requests handed straight to go-fuse's request handler: no
// /dev/fuse and no mount, but the same path from a request to the
// source, the decision and the record.

const rawPolicy = `active_intents:
  - id: INT-001
    name: api work
    status: IN_PROGRESS
    owned_scope: ["src/**"]
  - id: INT-002
    name: everything
    status: IN_PROGRESS
    owned_scope: ["**"]
`

// fakeGovernor decides with a fixed policy and keeps what it is told.
type fakeGovernor struct {
	snap *policy.Snapshot

	mu       sync.Mutex
	intent   string
	records  []ledger.Change
	denials  []policy.Decision
	hold     syscall.Errno
	held     []fsnode.HoldRequest
	ledgerOK error
}

func (g *fakeGovernor) Snapshot() *policy.Snapshot { return g.snap }

func (g *fakeGovernor) ActorOf(c *fuse.Caller) fsnode.Actor {
	g.mu.Lock()
	defer g.mu.Unlock()
	return fsnode.Actor{Intent: g.intent}
}

func (g *fakeGovernor) Process(c *fuse.Caller) *ledger.Process {
	if c == nil {
		return &ledger.Process{}
	}
	return &ledger.Process{Pid: c.Pid, Uid: c.Uid, Gid: c.Gid, Comm: "test"}
}

func (g *fakeGovernor) Denied(req policy.Request, d policy.Decision, p *ledger.Process, s *ledger.Session) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.denials = append(g.denials, d)
}

// Discarded is a denial like the mount's: the removal of a temporary is
// recorded as a refused creation with its hash.
func (g *fakeGovernor) Discarded(req policy.Request, d policy.Decision, preHash, preImage string, p *ledger.Process, s *ledger.Session) {
	g.Denied(req, d, p, s)
}

func (g *fakeGovernor) Record(c ledger.Change) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.records = append(g.records, c)
}

func (g *fakeGovernor) DeclaredClass() ledger.MutationClass { return "" }

func (g *fakeGovernor) Hold(ctx context.Context, h fsnode.HoldRequest) syscall.Errno {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = append(g.held, h)
	return g.hold
}

func (g *fakeGovernor) LedgerErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ledgerOK
}

func (g *fakeGovernor) setIntent(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.intent = id
}

// take returns and forgets the records and denials so far.
func (g *fakeGovernor) take() ([]ledger.Change, []policy.Decision) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, d := g.records, g.denials
	g.records, g.denials = nil, nil
	return r, d
}

// kernel sends raw requests to the filesystem of one source.
type kernel struct {
	t      *testing.T
	src    string
	gov    *fakeGovernor
	root   *fsnode.Root
	raw    fuse.RawFileSystem
	ops    *rawfs.OpCounter
	caller fuse.Caller
	nodes  map[string]uint64 // path → node id, as the kernel keeps them
}

func newKernel(t *testing.T, files map[string]string) *kernel {
	t.Helper()
	return newKernelWith(t, rawPolicy, files)
}

// newKernelWith is newKernel with the policy pol.
func newKernelWith(t *testing.T, pol string, files map[string]string) *kernel {
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
	in, _, err := policy.ParseIntents("p.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	return newKernelGov(t, src, &fakeGovernor{snap: &policy.Snapshot{Intents: in}, intent: "INT-001"})
}

// newKernelGov serves src with the governor gov.
func newKernelGov(t *testing.T, src string, gov fsnode.Governor) *kernel {
	t.Helper()
	return newKernelStore(t, src, gov, objects.New(src))
}

// newKernelStore is newKernelGov keeping pre-images in store.
func newKernelStore(t *testing.T, src string, gov fsnode.Governor, store *objects.Store) *kernel {
	t.Helper()
	root, err := fsnode.NewRoot(fsnode.Options{Source: src, Governor: gov, Log: slog.New(slog.DiscardHandler),
		Objects: store, KeepMaxBytes: 1 << 20, MaxHandlesPerUID: 64, MaxCachedDirs: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	// The same stack of request handlers as the daemon mounts.
	ops := rawfs.CountOps(rawfs.ElideOpendir(root.CallerScope(fs.NewNodeFS(root.Node(), &fs.Options{NullPermissions: true}))))
	fake, _ := gov.(*fakeGovernor)
	if g, ok := gov.(*gitGovernor); ok {
		fake = g.fakeGovernor
	}
	return &kernel{t: t, src: src, gov: fake, root: root, raw: ops, ops: ops,
		caller: fuse.Caller{Owner: fuse.Owner{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, Pid: uint32(os.Getpid())},
		nodes:  map[string]uint64{"": fuse.FUSE_ROOT_ID}}
}

func (k *kernel) header(node uint64) fuse.InHeader {
	return fuse.InHeader{NodeId: node, Caller: k.caller}
}

// node looks rel up, component by component, as the kernel does.
func (k *kernel) node(rel string) (uint64, fuse.Status) {
	if id, ok := k.nodes[rel]; ok {
		return id, fuse.OK
	}
	parent, st := k.node(parentOf(rel))
	if st != fuse.OK {
		return 0, st
	}
	var out fuse.EntryOut
	h := k.header(parent)
	if st := k.raw.Lookup(nil, &h, filepath.Base(rel), &out); st != fuse.OK {
		return 0, st
	}
	k.nodes[rel] = out.NodeId
	return out.NodeId, fuse.OK
}

func (k *kernel) mustNode(rel string) uint64 {
	k.t.Helper()
	id, st := k.node(rel)
	if st != fuse.OK {
		k.t.Fatalf("lookup %s: %v", rel, st)
	}
	return id
}

func parentOf(rel string) string {
	d := filepath.Dir(rel)
	if d == "." {
		return ""
	}
	return d
}

// create creates rel, writes content and releases it, as
// `printf content > rel` does; it returns the first failure.
func (k *kernel) create(rel, content string) fuse.Status {
	k.t.Helper()
	parent, st := k.node(parentOf(rel))
	if st != fuse.OK {
		return st
	}
	in := fuse.CreateIn{InHeader: k.header(parent), Flags: uint32(os.O_WRONLY | os.O_CREATE | os.O_TRUNC), Mode: 0o644}
	var out fuse.CreateOut
	if st := k.raw.Create(nil, &in, filepath.Base(rel), &out); st != fuse.OK {
		return st
	}
	k.nodes[rel] = out.NodeId
	return k.writeAndRelease(out.NodeId, out.Fh, content)
}

// write opens rel for writing (truncating it), writes content and
// releases it.
func (k *kernel) write(rel, content string) fuse.Status {
	k.t.Helper()
	id, st := k.node(rel)
	if st != fuse.OK {
		return st
	}
	in := fuse.OpenIn{InHeader: k.header(id), Flags: uint32(os.O_WRONLY | os.O_TRUNC)}
	var out fuse.OpenOut
	if st := k.raw.Open(nil, &in, &out); st != fuse.OK {
		return st
	}
	return k.writeAndRelease(id, out.Fh, content)
}

func (k *kernel) writeAndRelease(id, fh uint64, content string) fuse.Status {
	defer k.release(id, fh)
	if content == "" {
		return fuse.OK
	}
	w := fuse.WriteIn{InHeader: k.header(id), Fh: fh, Size: uint32(len(content))}
	if n, st := k.raw.Write(nil, &w, []byte(content)); st != fuse.OK || int(n) != len(content) {
		if st == fuse.OK {
			st = fuse.EIO
		}
		return st
	}
	return fuse.OK
}

func (k *kernel) release(id, fh uint64) {
	in := fuse.ReleaseIn{InHeader: k.header(id), Fh: fh}
	k.raw.Release(nil, &in)
}

// read opens rel for reading and returns what it holds.
func (k *kernel) read(rel string) (string, fuse.Status) {
	id, st := k.node(rel)
	if st != fuse.OK {
		return "", st
	}
	in := fuse.OpenIn{InHeader: k.header(id), Flags: uint32(os.O_RDONLY)}
	var out fuse.OpenOut
	if st := k.raw.Open(nil, &in, &out); st != fuse.OK {
		return "", st
	}
	defer k.release(id, out.Fh)
	buf := make([]byte, 1<<16)
	r, st := k.raw.Read(nil, &fuse.ReadIn{InHeader: k.header(id), Fh: out.Fh, Size: uint32(len(buf))}, buf)
	if st != fuse.OK {
		return "", st
	}
	b, st := r.Bytes(buf)
	r.Done()
	return string(b), st
}

func (k *kernel) mkdir(rel string) fuse.Status {
	parent, st := k.node(parentOf(rel))
	if st != fuse.OK {
		return st
	}
	var out fuse.EntryOut
	if st := k.raw.Mkdir(nil, &fuse.MkdirIn{InHeader: k.header(parent), Mode: 0o755}, filepath.Base(rel), &out); st != fuse.OK {
		return st
	}
	k.nodes[rel] = out.NodeId
	return fuse.OK
}

func (k *kernel) unlink(rel string) fuse.Status {
	parent, st := k.node(parentOf(rel))
	if st != fuse.OK {
		return st
	}
	h := k.header(parent)
	st = k.raw.Unlink(nil, &h, filepath.Base(rel))
	if st == fuse.OK {
		delete(k.nodes, rel)
	}
	return st
}

func (k *kernel) rmdir(rel string) fuse.Status {
	parent, st := k.node(parentOf(rel))
	if st != fuse.OK {
		return st
	}
	h := k.header(parent)
	st = k.raw.Rmdir(nil, &h, filepath.Base(rel))
	if st == fuse.OK {
		delete(k.nodes, rel)
	}
	return st
}

func (k *kernel) rename(from, to string, flags uint32) fuse.Status {
	p1, st := k.node(parentOf(from))
	if st != fuse.OK {
		return st
	}
	p2, st := k.node(parentOf(to))
	if st != fuse.OK {
		return st
	}
	in := fuse.RenameIn{InHeader: k.header(p1), Newdir: p2, Flags: flags}
	st = k.raw.Rename(nil, &in, filepath.Base(from), filepath.Base(to))
	if st == fuse.OK {
		for p := range k.nodes {
			if p == from || strings.HasPrefix(p, from+"/") || p == to || strings.HasPrefix(p, to+"/") {
				delete(k.nodes, p)
			}
		}
	}
	return st
}

func (k *kernel) symlink(target, rel string) fuse.Status {
	parent, st := k.node(parentOf(rel))
	if st != fuse.OK {
		return st
	}
	var out fuse.EntryOut
	h := k.header(parent)
	return k.raw.Symlink(nil, &h, target, filepath.Base(rel), &out)
}

func (k *kernel) link(existing, rel string) fuse.Status {
	old, st := k.node(existing)
	if st != fuse.OK {
		return st
	}
	parent, st := k.node(parentOf(rel))
	if st != fuse.OK {
		return st
	}
	var out fuse.EntryOut
	return k.raw.Link(nil, &fuse.LinkIn{InHeader: k.header(parent), Oldnodeid: old}, filepath.Base(rel), &out)
}

func (k *kernel) chmod(rel string, mode uint32) fuse.Status {
	id, st := k.node(rel)
	if st != fuse.OK {
		return st
	}
	var out fuse.AttrOut
	return k.raw.SetAttr(nil, &fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: k.header(id), Valid: fuse.FATTR_MODE, Mode: mode}}, &out)
}

func (k *kernel) truncate(rel string, size uint64) fuse.Status {
	id, st := k.node(rel)
	if st != fuse.OK {
		return st
	}
	var out fuse.AttrOut
	return k.raw.SetAttr(nil, &fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: k.header(id), Valid: fuse.FATTR_SIZE, Size: size}}, &out)
}

func (k *kernel) setxattr(rel, name, value string) fuse.Status {
	id, st := k.node(rel)
	if st != fuse.OK {
		return st
	}
	return k.raw.SetXAttr(nil, &fuse.SetXAttrIn{InHeader: k.header(id), Size: uint32(len(value))}, name, []byte(value))
}

// list lists the directory rel.
func (k *kernel) list(rel string) ([]string, fuse.Status) {
	id, st := k.node(rel)
	if st != fuse.OK {
		return nil, st
	}
	var oo fuse.OpenOut
	if st := k.raw.OpenDir(nil, &fuse.OpenIn{InHeader: k.header(id)}, &oo); st != fuse.OK {
		return nil, st
	}
	defer k.raw.ReleaseDir(&fuse.ReleaseIn{InHeader: k.header(id), Fh: oo.Fh})
	buf := make([]byte, 1<<16)
	dl := fuse.NewDirEntryList(buf, 0)
	if st := k.raw.ReadDir(nil, &fuse.ReadIn{InHeader: k.header(id), Fh: oo.Fh, Size: uint32(len(buf))}, dl); st != fuse.OK {
		return nil, st
	}
	var names []string
	for _, e := range parseDirents(dl.Bytes()) {
		if e != "." && e != ".." {
			names = append(names, e)
		}
	}
	return names, fuse.OK
}

// parseDirents reads the names of FUSE dirents (struct fuse_dirent).
func parseDirents(b []byte) []string {
	var names []string
	for len(b) >= 24 {
		nameLen := int(b[16]) | int(b[17])<<8 | int(b[18])<<16 | int(b[19])<<24
		if 24+nameLen > len(b) {
			break
		}
		names = append(names, string(b[24:24+nameLen]))
		size := (24 + nameLen + 7) &^ 7
		if size > len(b) {
			break
		}
		b = b[size:]
	}
	return names
}

func (k *kernel) onDisk(rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(k.src, rel))
	return string(b), err == nil
}
