package fsnode_test

import (
	"os"
	"slices"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestCloseRecordsHandlesNeverReleased: the kernel sends RELEASE after
// close(2) has returned, and a mount that goes away at once (SIGTERM
// right after a write) may never send it, or the daemon never read it.
// Closing the root records what such handles wrote: an allowed change
// is never left out of the ledger. Closing twice is harmless.
func TestCloseRecordsHandlesNeverReleased(t *testing.T) {
	k := newKernel(t, map[string]string{"src/a.go": "package a\n"})
	parent := k.mustNode("src")
	in := fuse.CreateIn{InHeader: k.header(parent), Flags: uint32(os.O_WRONLY | os.O_CREATE | os.O_TRUNC), Mode: 0o644}
	var out fuse.CreateOut
	if st := k.raw.Create(nil, &in, "new.go", &out); st != fuse.OK {
		t.Fatalf("create: %v", st)
	}
	w := fuse.WriteIn{InHeader: k.header(out.NodeId), Fh: out.Fh, Size: 12}
	if _, st := k.raw.Write(nil, &w, []byte("package new\n")); st != fuse.OK {
		t.Fatalf("write: %v", st)
	}
	if recs, _ := k.gov.take(); len(recs) != 0 {
		t.Fatalf("records before the close: %v", summary(recs))
	}
	if err := k.root.Close(); err != nil {
		t.Fatal(err)
	}
	recs, _ := k.gov.take()
	if got := summary(recs); !slices.Equal(got, []string{"create src/new.go"}) || recs[0].PostHash != sha("package new\n") {
		t.Fatalf("records at close: %v %+v", got, recs)
	}
	if err := k.root.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}
