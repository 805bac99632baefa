package control

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestByProcessKeepsOneStatePerProcessAndIsBounded: handle-less control
// files keep a state per calling process, never more than the bound.
func TestByProcessKeepsOneStatePerProcessAndIsBounded(t *testing.T) {
	b := byProcess[ctlHandle]{parentOf: func(uint32) (uint32, bool) { return 0, false }}
	c := func(pid uint32) *fuse.Caller { return &fuse.Caller{Pid: pid} }
	if b.get(c(1), false) != nil {
		t.Fatal("a state exists before any write")
	}
	first := b.get(c(1), true)
	if b.get(c(1), false) != first || b.get(c(1), true) != first {
		t.Fatal("the same process got another state")
	}
	if b.get(c(2), true) == first {
		t.Fatal("two processes share a state")
	}
	if b.get(nil, true) == nil {
		t.Fatal("a request without a caller got no state")
	}
	for pid := uint32(10); pid < 10+3*maxHandlelessStates; pid++ {
		b.get(c(pid), true)
		if len(b.m) > maxHandlelessStates {
			t.Fatalf("%d states kept, bound %d", len(b.m), maxHandlelessStates)
		}
	}
}

// TestByProcessStateIsInherited: a child finds the state of its nearest
// ancestor that has one, as it would inherit that ancestor's descriptor,
// but only one its own uid made, and not past the depth bound.
func TestByProcessStateIsInherited(t *testing.T) {
	// 100 is the shell; 101 its child, 102 a grandchild; 200 another tree.
	parents := map[uint32]uint32{101: 100, 102: 101, 100: 50, 201: 200}
	b := byProcess[checkHandle]{parentOf: func(pid uint32) (uint32, bool) { p, ok := parents[pid]; return p, ok }}
	as := func(pid, uid uint32) *fuse.Caller { return &fuse.Caller{Pid: pid, Owner: fuse.Owner{Uid: uid}} }
	shell := b.get(as(100, 1000), true)
	for _, c := range []struct {
		name   string
		caller *fuse.Caller
		create bool
		want   func(*checkHandle) bool
	}{
		{"the shell itself", as(100, 1000), false, func(h *checkHandle) bool { return h == shell }},
		{"its child reads", as(101, 1000), false, func(h *checkHandle) bool { return h == shell }},
		{"its grandchild writes", as(102, 1000), true, func(h *checkHandle) bool { return h == shell }},
		{"a child of another uid", as(101, 1001), false, func(h *checkHandle) bool { return h == nil }},
		{"another tree", as(201, 1000), false, func(h *checkHandle) bool { return h == nil }},
		{"another tree writes", as(201, 1000), true, func(h *checkHandle) bool { return h != nil && h != shell }},
	} {
		if got := b.get(c.caller, c.create); !c.want(got) {
			t.Errorf("%s: got state %p (the shell's is %p)", c.name, got, shell)
		}
	}
	// A chain longer than the bound is not followed.
	deep := byProcess[checkHandle]{parentOf: func(pid uint32) (uint32, bool) { return pid - 1, true }}
	top := deep.get(as(1000, 0), true)
	if deep.get(as(1000+maxInheritDepth, 0), false) != top {
		t.Error("a descendant within the bound did not find the state")
	}
	if deep.get(as(1001+maxInheritDepth, 0), false) != nil {
		t.Error("a descendant past the bound found the state")
	}
}

// TestCheckAnswerReadWithoutHandle: read through the page cache, the
// answer is whole both from the asking descriptor's position (after the
// question) and from the start, where spaces stand for the question.
func TestCheckAnswerReadWithoutHandle(t *testing.T) {
	h := &checkHandle{answer: []byte(`{"allowed":true}` + "\n"), base: 5}
	for _, c := range []struct {
		off  int64
		n    int
		want string
	}{
		{0, 4096, `     {"allowed":true}` + "\n"},
		{5, 4096, `{"allowed":true}` + "\n"},
		{3, 4, `  {"`},
		{22, 10, ""},
		{21, 10, "\n"},
		{-1, 10, ""},
	} {
		buf := make([]byte, c.n)
		got, _ := h.readPadded(buf, c.off).Bytes(buf)
		if string(got) != c.want {
			t.Errorf("read %d at %d: %q, want %q", c.n, c.off, got, c.want)
		}
	}
}

// TestHandlelessIncompleteCommandIsRefused: a command written in parts
// with no handle (the cached data path, where no FLUSH comes at close)
// is refused, as Flush refuses it, once its process's writes pause; one
// completed in time is applied whole.
func TestHandlelessIncompleteCommandIsRefused(t *testing.T) {
	type applied struct {
		data string
		pid  uint32
	}
	got := make(chan applied, 4)
	f := &ctlFile{partial: partialScopeRequest, write: func(data []byte, caller *fuse.Caller) syscall.Errno {
		got <- applied{string(data), caller.Pid}
		return 0
	}}
	f.handleless.parentOf = func(uint32) (uint32, bool) { return 0, false }
	write := func(pid uint32, data string) {
		t.Helper()
		ctx := fuse.NewContext(context.Background(), &fuse.Caller{Pid: pid})
		if n, errno := f.Write(ctx, nil, []byte(data), 0); errno != 0 || int(n) != len(data) {
			t.Fatalf("write %q: %d %v", data, n, errno)
		}
	}
	write(7, "paths: docs/**\n")
	write(7, "why: a page\n")
	if a := <-got; a.data != "paths: docs/**\nwhy: a page\n" || a.pid != 7 {
		t.Fatalf("the completed command: %+v", a)
	}
	write(8, "paths: docs/**\n")
	select {
	case a := <-got:
		if a.data != "paths: docs/**\n" || a.pid != 8 {
			t.Fatalf("the incomplete command was given on as %+v", a)
		}
	case <-time.After(10 * incompleteAfter):
		t.Fatal("the incomplete command was left pending")
	}
	select {
	case a := <-got:
		t.Fatalf("more given on: %+v", a)
	case <-time.After(2 * incompleteAfter):
	}
}
