package control

import (
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestByProcessKeepsOneStatePerProcessAndIsBounded: handle-less control
// files keep a state per calling process, never more than the bound.
func TestByProcessKeepsOneStatePerProcessAndIsBounded(t *testing.T) {
	var b byProcess[ctlHandle]
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
