package fsnode_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// summary is "event path" of each record, with "<-from" for a rename.
func summary(recs []ledger.Change) []string {
	var out []string
	for _, r := range recs {
		s := string(r.Event) + " " + r.Path
		if r.FromPath != "" {
			s += " <-" + r.FromPath
		}
		out = append(out, s)
	}
	return out
}

// TestWritePathInScope: every kind of change inside the scope reaches the
// source and is recorded once, with the content it left and the intent it
// was made under.
func TestWritePathInScope(t *testing.T) {
	k := newKernel(t, map[string]string{"src/a.go": "package a\n", "src/old.go": "package old\n", "README.md": "# p\n"})
	steps := []struct {
		name string
		do   func() fuse.Status
		want []string // records, "event path"
	}{
		{"create", func() fuse.Status { return k.create("src/new.go", "package new\n") }, []string{"create src/new.go"}},
		{"write", func() fuse.Status { return k.write("src/a.go", "package a2\n") }, []string{"write src/a.go"}},
		{"mkdir", func() fuse.Status { return k.mkdir("src/pkg") }, []string{"mkdir src/pkg"}},
		{"rename", func() fuse.Status { return k.rename("src/old.go", "src/pkg/old.go", 0) }, []string{"rename src/pkg/old.go <-src/old.go"}},
		{"symlink", func() fuse.Status { return k.symlink("a.go", "src/link") }, []string{"symlink src/link"}},
		{"chmod", func() fuse.Status { return k.chmod("src/a.go", 0o600) }, []string{"chmod src/a.go"}},
		{"hard link", func() fuse.Status { return k.link("src/a.go", "src/a2.go") }, []string{"link src/a2.go <-src/a.go"}},
		{"truncate", func() fuse.Status { return k.truncate("src/new.go", 3) }, []string{"truncate src/new.go"}},
		{"unlink", func() fuse.Status { return k.unlink("src/a2.go") }, []string{"delete src/a2.go"}},
		{"rmdir", func() fuse.Status {
			if st := k.rename("src/pkg/old.go", "src/old.go", 0); st != fuse.OK {
				return st
			}
			return k.rmdir("src/pkg")
		}, []string{"rename src/old.go <-src/pkg/old.go", "rmdir src/pkg"}},
	}
	for _, s := range steps {
		if st := s.do(); st != fuse.OK {
			t.Fatalf("%s: %v", s.name, st)
		}
		recs, denials := k.gov.take()
		if got := summary(recs); !slices.Equal(got, s.want) || len(denials) != 0 {
			t.Fatalf("%s: records %v, denials %v; want %v", s.name, got, denials, s.want)
		}
		for _, r := range recs {
			if r.Intent != "INT-001" || r.Process == nil || r.Process.Pid != k.caller.Pid {
				t.Errorf("%s: record %+v does not name INT-001 and the caller", s.name, r)
			}
		}
	}
	for rel, want := range map[string]string{"src/new.go": "pac", "src/a.go": "package a2\n", "src/old.go": "package old\n"} {
		if got, ok := k.onDisk(rel); !ok || got != want {
			t.Errorf("%s on the source = %q (%v), want %q", rel, got, ok, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(k.src, "src/a.go")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("src/a.go's mode: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(k.src, "src/link")); err != nil || target != "a.go" {
		t.Errorf("src/link -> %q (%v)", target, err)
	}
	for _, gone := range []string{"src/a2.go", "src/pkg"} {
		if _, err := os.Lstat(filepath.Join(k.src, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is still on the source: %v", gone, err)
		}
	}
	if got, st := k.read("src/a.go"); st != fuse.OK || got != "package a2\n" {
		t.Errorf("reading src/a.go through the mount: %q %v", got, st)
	}
}

// TestWritePathRecordsContent: a write's record carries the hash of what
// the file held before and after, and the version it replaced is kept.
func TestWritePathRecordsContent(t *testing.T) {
	k := newKernel(t, map[string]string{"src/a.go": "package a\n"})
	if st := k.write("src/a.go", "package b\n"); st != fuse.OK {
		t.Fatal(st)
	}
	recs, _ := k.gov.take()
	if len(recs) != 1 {
		t.Fatalf("records %v", summary(recs))
	}
	r := recs[0]
	if r.PreHash != sha("package a\n") || r.PostHash != sha("package b\n") || r.Validation != string(policy.ValidationPass) {
		t.Fatalf("record %+v: want pre %s, post %s", r, sha("package a\n"), sha("package b\n"))
	}
	if r.PreImage != "stored" {
		t.Fatalf("the replaced version was not kept: pre_image %q", r.PreImage)
	}
	// Opening for writing and closing without a change records nothing.
	id := k.mustNode("src/a.go")
	var out fuse.OpenOut
	if st := k.raw.Open(nil, &fuse.OpenIn{InHeader: k.header(id), Flags: uint32(os.O_WRONLY)}, &out); st != fuse.OK {
		t.Fatal(st)
	}
	k.release(id, out.Fh)
	if recs, _ := k.gov.take(); len(recs) != 0 {
		t.Fatalf("an unchanged file was recorded: %v", summary(recs))
	}
}

// TestWritePathOutOfScope: every kind of change outside the scope is
// refused with EACCES, recorded as a denial, and leaves the source as it
// was.
func TestWritePathOutOfScope(t *testing.T) {
	k := newKernel(t, map[string]string{"src/a.go": "package a\n", "README.md": "# p\n", "docs/d.md": "d\n", policy.IntentsFile: rawPolicy})
	tests := []struct {
		name string
		do   func() fuse.Status
	}{
		{"create", func() fuse.Status { return k.create("new.md", "x\n") }},
		{"write", func() fuse.Status { return k.write("README.md", "pwned\n") }},
		{"mkdir", func() fuse.Status { return k.mkdir("lib") }},
		{"rename out of the scope", func() fuse.Status { return k.rename("src/a.go", "a.go", 0) }},
		{"rename into the scope", func() fuse.Status { return k.rename("README.md", "src/README.md", 0) }},
		{"exchange", func() fuse.Status { return k.rename("src/a.go", "README.md", 2 /* RENAME_EXCHANGE */) }},
		{"symlink", func() fuse.Status { return k.symlink("src/a.go", "a-link") }},
		{"hard link out", func() fuse.Status { return k.link("src/a.go", "a-hard") }},
		{"chmod", func() fuse.Status { return k.chmod("README.md", 0o777) }},
		{"truncate", func() fuse.Status { return k.truncate("README.md", 0) }},
		{"unlink", func() fuse.Status { return k.unlink("README.md") }},
		{"rmdir", func() fuse.Status { return k.rmdir("docs") }},
		{"setxattr", func() fuse.Status { return k.setxattr("README.md", "user.x", "1") }},
		{"the policy", func() fuse.Status { return k.write(policy.IntentsFile, "active_intents: []\n") }},
	}
	for _, tt := range tests {
		st := tt.do()
		if st != fuse.EACCES && !(tt.name == "rmdir" && st == fuse.Status(syscall.ENOTEMPTY)) {
			t.Errorf("%s: %v, want EACCES", tt.name, st)
		}
		recs, denials := k.gov.take()
		if len(recs) != 0 {
			t.Errorf("%s: recorded %v", tt.name, summary(recs))
		}
		if st == fuse.EACCES && (len(denials) != 1 || denials[0].Allow || denials[0].Reason == "") {
			t.Errorf("%s: denials %+v, want one with a reason", tt.name, denials)
		}
	}
	for rel, want := range map[string]string{"README.md": "# p\n", "src/a.go": "package a\n", "docs/d.md": "d\n", policy.IntentsFile: rawPolicy} {
		if got, ok := k.onDisk(rel); !ok || got != want {
			t.Errorf("%s on the source = %q (%v), want %q", rel, got, ok, want)
		}
	}
	for _, absent := range []string{"new.md", "lib", "a.go", "src/README.md", "a-link", "a-hard"} {
		if _, err := os.Lstat(filepath.Join(k.src, absent)); !os.IsNotExist(err) {
			t.Errorf("%s appeared on the source: %v", absent, err)
		}
	}
}

// TestWritePathNoIntentAndBrokenLedger: without an intent nothing may
// change; with a ledger that cannot record, a traced change is refused
// (fail closed) while reading goes on.
func TestWritePathNoIntentAndBrokenLedger(t *testing.T) {
	k := newKernel(t, map[string]string{"src/a.go": "package a\n"})
	k.gov.setIntent("")
	if st := k.write("src/a.go", "x\n"); st != fuse.EACCES {
		t.Fatalf("writing with no intent: %v", st)
	}
	if _, d := k.gov.take(); len(d) != 1 || d[0].Code != policy.CodeNoIntent {
		t.Fatalf("denials %+v", d)
	}
	k.gov.setIntent("INT-001")
	k.gov.mu.Lock()
	k.gov.ledgerOK = syscall.ENOSPC
	k.gov.mu.Unlock()
	if st := k.create("src/b.go", "package b\n"); st == fuse.OK {
		t.Fatal("a change was made while the ledger cannot record it")
	}
	if _, ok := k.onDisk("src/b.go"); ok {
		t.Fatal("src/b.go reached the source while the ledger cannot record it")
	}
	if got, st := k.read("src/a.go"); st != fuse.OK || got != "package a\n" {
		t.Fatalf("reading while the ledger is broken: %q %v", got, st)
	}
}

// TestWritePathHold: a change the approval rules hold is refused when the
// governor says so, and the held request names the change and its
// caller.
func TestWritePathHold(t *testing.T) {
	k := newKernelWith(t, "approvals:\n  - ops: [delete]\n"+rawPolicy, map[string]string{"src/a.go": "package a\n"})
	k.gov.mu.Lock()
	k.gov.hold = syscall.EACCES
	k.gov.mu.Unlock()
	if st := k.unlink("src/a.go"); st != fuse.EACCES {
		t.Fatalf("a refused hold: %v", st)
	}
	if _, ok := k.onDisk("src/a.go"); !ok {
		t.Fatal("the held deletion was made")
	}
	k.gov.mu.Lock()
	held := k.gov.held
	k.gov.mu.Unlock()
	if len(held) != 1 || held[0].Request.Op != policy.OpUnlink || held[0].Request.Path != "src/a.go" || held[0].Request.Intent != "INT-001" ||
		held[0].Request.Caller.Pid != k.caller.Pid || held[0].Size == nil {
		t.Fatalf("held %+v", held)
	}
	if n, ok := held[0].Size(); !ok || n != int64(len("package a\n")) {
		t.Fatalf("the held deletion's size: %d %v", n, ok)
	}
}

// TestWritePathCallerCredentials: a change is made as the process that
// asked, so a caller gets exactly what it could do on the source.
func TestWritePathCallerCredentials(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("taking on another user's credentials needs root")
	}
	k := newKernel(t, map[string]string{"src/root-only.go": "secret\n"})
	if err := os.Chmod(filepath.Join(k.src, "src/root-only.go"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(k.src, "src"), 0o777); err != nil {
		t.Fatal(err)
	}
	k.caller = fuse.Caller{Owner: fuse.Owner{Uid: 1000, Gid: 1000}, Pid: uint32(os.Getpid())}
	if _, st := k.read("src/root-only.go"); st != fuse.EACCES {
		t.Fatalf("uid 1000 reading a root-only file: %v", st)
	}
	if st := k.write("src/root-only.go", "pwned\n"); st != fuse.EACCES {
		t.Fatalf("uid 1000 writing a root-only file: %v", st)
	}
	if st := k.create("src/mine.go", "package mine\n"); st != fuse.OK {
		t.Fatalf("uid 1000 creating in a world-writable directory: %v", st)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(k.src, "src/mine.go"), &st); err != nil || st.Uid != 1000 || st.Gid != 1000 {
		t.Fatalf("src/mine.go belongs to %d:%d (%v), want the caller 1000:1000", st.Uid, st.Gid, err)
	}
	if got, ok := k.onDisk("src/root-only.go"); !ok || got != "secret\n" {
		t.Fatalf("src/root-only.go = %q", got)
	}
}

// TestLookupAndList: the mount shows the source's entries, and never
// follows a symlink out of it.
func TestLookupAndList(t *testing.T) {
	k := newKernel(t, map[string]string{"src/a.go": "package a\n", "src/b.go": "package b\n"})
	if err := os.Symlink("/etc", filepath.Join(k.src, "src/etc")); err != nil {
		t.Fatal(err)
	}
	names, st := k.list("src")
	slices.Sort(names)
	if st != fuse.OK || strings.Join(names, ",") != "a.go,b.go,etc" {
		t.Fatalf("listing src: %v %v", names, st)
	}
	if _, st := k.node("src/missing"); st != fuse.ENOENT {
		t.Fatalf("looking up a missing file: %v", st)
	}
	if _, st := k.node("src/etc/passwd"); st == fuse.OK {
		t.Fatal("a lookup followed a symlink out of the source")
	}
	id := k.mustNode("src/a.go")
	var out fuse.AttrOut
	if st := k.raw.GetAttr(nil, &fuse.GetAttrIn{InHeader: k.header(id)}, &out); st != fuse.OK || out.Size != uint64(len("package a\n")) || out.Mode&syscall.S_IFMT != syscall.S_IFREG {
		t.Fatalf("getattr src/a.go: %v %+v", st, out.Attr)
	}
}
