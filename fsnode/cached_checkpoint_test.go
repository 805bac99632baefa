package fsnode_test

import (
	"slices"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/ledger"
)

// TestCachedCheckpointKeepsWriters: a reader of the ledger (status, log,
// verify) checkpoints the cached path's writers: what each wrote so far
// is recorded at once, with the version it replaced kept, and the writer
// stays, so the process's next write goes on through it and is recorded
// from the checkpoint's version. A writer that has truncated its file and
// written nothing yet records nothing: the emptied file is no one's
// version; its truncation and the write after it are one record.
func TestCachedCheckpointKeepsWriters(t *testing.T) {
	k := newCachedKernel(t, map[string]string{"src/a.go": "package a\n", "src/t.go": "package t\n"})
	pid := k.caller.Pid

	if st := k.writeAt("src/a.go", pid, "package b\n", 0); st != fuse.OK {
		t.Fatal(st)
	}
	k.root.CheckpointWrites()
	recs, _ := k.gov.take()
	if got := summary(recs); !slices.Equal(got, []string{"write src/a.go"}) || recs[0].PreHash != sha("package a\n") || recs[0].PostHash != sha("package b\n") {
		t.Fatalf("first checkpoint: %v %+v", got, recs)
	}
	if n := k.root.PendingCachedWriters(); n != 1 {
		t.Fatalf("%d writers after the checkpoint, want the one still writing", n)
	}

	k.root.CheckpointWrites()
	if recs, _ := k.gov.take(); len(recs) != 0 {
		t.Fatalf("a checkpoint with nothing written since recorded %v", summary(recs))
	}

	if st := k.writeAt("src/a.go", pid, "package c\n", 0); st != fuse.OK {
		t.Fatal(st)
	}
	k.root.CheckpointWrites()
	recs, _ = k.gov.take()
	if len(recs) != 1 || recs[0].Event != ledger.EventWrite || recs[0].PreHash != sha("package b\n") || recs[0].PostHash != sha("package c\n") {
		t.Fatalf("second checkpoint: %v %+v", summary(recs), recs)
	}
	if b, err := k.store.Read(sha("package b\n")); err != nil || string(b) != "package b\n" {
		t.Errorf("the version the second write replaced was not kept: %q %v", b, err)
	}

	if st := k.truncate("src/t.go", 0); st != fuse.OK {
		t.Fatalf("truncate: %v", st)
	}
	k.root.CheckpointWrites()
	if recs, _ := k.gov.take(); len(recs) != 0 {
		t.Fatalf("a checkpoint right after a truncation recorded the emptied file: %v", summary(recs))
	}
	if st := k.writeAt("src/t.go", pid, "package u\n", 0); st != fuse.OK {
		t.Fatal(st)
	}
	k.root.CheckpointWrites()
	recs, _ = k.gov.take()
	if len(recs) != 1 || recs[0].Path != "src/t.go" || recs[0].PreHash != sha("package t\n") || recs[0].PostHash != sha("package u\n") {
		t.Fatalf("truncation and write: %v %+v", summary(recs), recs)
	}

	k.root.SettleWrites()
	if recs, _ := k.gov.take(); len(recs) != 0 {
		t.Fatalf("ending writers whose writes were all checkpointed recorded %v", summary(recs))
	}
	if n := k.root.PendingCachedWriters(); n != 0 {
		t.Fatalf("%d writers left after the settle", n)
	}
}
