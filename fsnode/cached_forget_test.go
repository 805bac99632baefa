package fsnode_test

import (
	"os"
	"slices"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestCachedWriterOfAForgottenNode: an editor's temporary is created and
// written (its creator's writes go through the writer of the node CREATE
// made), closed, and the kernel forgets that node before the rename puts
// the file in place: a listing by another process had already given the
// kernel the name under another node, which the rename then moves. What
// was written is recorded under the temporary's name before the rename,
// never after it: a record of the old name after the rename would say the
// name still exists.
func TestCachedWriterOfAForgottenNode(t *testing.T) {
	k := newCachedKernel(t, map[string]string{"src/a.go": "old\n"})
	// The first OPEN is declined: from then on the kernel sends none, and
	// a created file's handle becomes its node's writer.
	var oo fuse.OpenOut
	if st := k.raw.Open(nil, &fuse.OpenIn{InHeader: k.header(k.mustNode("src/a.go")), Flags: uint32(os.O_RDONLY)}, &oo); st != fuse.ENOSYS {
		t.Fatalf("open: %v, want ENOSYS", st)
	}
	var co fuse.CreateOut
	in := fuse.CreateIn{InHeader: k.header(k.mustNode("src")), Flags: uint32(os.O_WRONLY | os.O_CREATE | os.O_EXCL), Mode: 0o644}
	if st := k.raw.Create(nil, &in, "tmp.go", &co); st != fuse.OK {
		t.Fatalf("create: %v", st)
	}
	if co.Fh != 0 {
		t.Fatalf("the created file got handle %d, want its node's writer", co.Fh)
	}
	w := fuse.WriteIn{InHeader: k.header(co.NodeId), Size: 4}
	if _, st := k.raw.Write(nil, &w, []byte("new\n")); st != fuse.OK {
		t.Fatalf("writing the temporary: %v", st)
	}
	k.raw.Forget(co.NodeId, 1)
	if again := k.mustNode("src/tmp.go"); again == co.NodeId {
		t.Fatalf("the temporary looked up again is node %d, the one forgotten", again)
	}
	if st := k.rename("src/tmp.go", "src/a.go", 0); st != fuse.OK {
		t.Fatalf("rename: %v", st)
	}
	k.root.SettleWrites()
	recs, _ := k.gov.take()
	want := []string{"create src/tmp.go", "rename src/a.go <-src/tmp.go"}
	if got := summary(recs); !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	if recs[0].PostHash != sha("new\n") || recs[1].PostHash != sha("new\n") {
		t.Errorf("post hashes: creation %s, rename %s; want both %s", recs[0].PostHash, recs[1].PostHash, sha("new\n"))
	}
	if n := k.root.PendingCachedWriters(); n != 0 {
		t.Errorf("%d writers left", n)
	}
}
