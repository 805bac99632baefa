package control

import (
	"context"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/intentfs/intentfs/ledger"
)

// sessionsByPid is a backend that knows which session each process is
// in, and nothing else.
type sessionsByPid struct {
	Backend
	of map[uint32]string
}

func (b sessionsByPid) SessionOf(by *ledger.Process) string {
	if by == nil {
		return ""
	}
	return b.of[by.Pid]
}

// TestViewsSeparateSessionsAndUids: on the cached data path a per-caller
// control file is one inode per session and uid (and, for check, per
// process), and a caller outside an inode's view is refused there.
func TestViewsSeparateSessionsAndUids(t *testing.T) {
	d := NewDir(sessionsByPid{of: map[uint32]string{10: "s1", 11: "s1", 20: "s2"}},
		func(c *fuse.Caller) *ledger.Process { return &ledger.Process{Pid: c.Pid} })
	as := func(pid, uid uint32) *fuse.Caller { return &fuse.Caller{Pid: pid, Owner: fuse.Owner{Uid: uid}} }
	ctxOf := func(c *fuse.Caller) context.Context {
		return &fuse.Context{Caller: *c, Cancel: nil}
	}
	for _, c := range []struct {
		name  string
		file  string
		a, b  *fuse.Caller
		share bool
	}{
		{"two processes of one session", "active", as(10, 1000), as(11, 1000), true},
		{"two sessions", "active", as(10, 1000), as(20, 1000), false},
		{"a session and no session", "status", as(10, 1000), as(30, 1000), false},
		{"no session, two uids", "active", as(30, 0), as(31, 1000), false},
		{"no session, one uid", "denials", as(30, 1000), as(31, 1000), true},
		{"check: two processes of one session", "check", as(10, 1000), as(11, 1000), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			va, vb := d.viewOf(c.file, c.a), d.viewOf(c.file, c.b)
			if (va == vb) != c.share {
				t.Fatalf("views %+v and %+v: shared=%v, want %v", va, vb, va == vb, c.share)
			}
			if errno := d.refuseOtherViews(ctxOf(c.a), &va); errno != 0 {
				t.Fatalf("the view's own caller refused: %v", errno)
			}
			sameSessionAndUid := va.session == vb.session && va.uid == vb.uid
			errno := d.refuseOtherViews(ctxOf(c.b), &va)
			if sameSessionAndUid && errno != 0 {
				t.Fatalf("a caller of the same session and uid refused: %v", errno)
			}
			if !sameSessionAndUid && errno != syscall.EACCES {
				t.Fatalf("a caller of another view: %v, want EACCES", errno)
			}
		})
	}
	if errno := d.refuseOtherViews(ctxOf(as(20, 1000)), nil); errno != 0 {
		t.Fatalf("a file with no view (the passthrough path) refused a caller: %v", errno)
	}
}

// TestPerCallerEntryOnlyForPerCallerFiles: only the files whose content
// depends on the reader are looked up at each use.
func TestPerCallerEntryOnlyForPerCallerFiles(t *testing.T) {
	d := &Dir{}
	for _, c := range []struct {
		name string
		gen  uint64
		want bool
	}{
		{"active", viewGeneration, true},
		{"check", viewGeneration, true},
		{"active", 0, false},
		{"README.md", viewGeneration, false},
		{"pending", viewGeneration, false},
	} {
		if got := d.PerCallerEntry(c.name, c.gen); got != c.want {
			t.Errorf("PerCallerEntry(%q, %d) = %v, want %v", c.name, c.gen, got, c.want)
		}
	}
}
