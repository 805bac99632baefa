package control

import (
	"os"
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

// TestByProcessAnswersTheChildOfTheAsker: the answer a shell asked for
// through a descriptor is read by the child it runs (cat <&3), and by no
// unrelated process.
func TestByProcessAnswersTheChildOfTheAsker(t *testing.T) {
	var b byProcess[checkHandle]
	parent := b.get(&fuse.Caller{Pid: uint32(os.Getppid())}, true)
	if got := b.getOrParent(&fuse.Caller{Pid: uint32(os.Getpid())}); got != parent {
		t.Fatalf("the asker's child got %p, want its parent's state %p", got, parent)
	}
	own := b.get(&fuse.Caller{Pid: uint32(os.Getpid())}, true)
	if got := b.getOrParent(&fuse.Caller{Pid: uint32(os.Getpid())}); got != own {
		t.Fatal("a process with its own state read its parent's")
	}
	if got := b.getOrParent(&fuse.Caller{Pid: 1}); got != nil {
		t.Fatal("init, which asked nothing and whose parent is none, got a state")
	}
	if ppid, ok := parentPID(uint32(os.Getpid())); !ok || ppid != uint32(os.Getppid()) {
		t.Fatalf("parentPID(self) = %d, %v; want %d", ppid, ok, os.Getppid())
	}
}

// TestCheckAnswerReadsAsAFile: without a handle, the answer reads from the
// offset past the question (cat <&3) and, after blanks a JSON reader
// skips, from offset 0, in reads of any size.
func TestCheckAnswerReadsAsAFile(t *testing.T) {
	h := &checkHandle{answer: []byte(`{"a":1}` + "\n"), base: 5}
	read := func(off int64, size int) string {
		var got []byte
		for {
			buf := make([]byte, size)
			r := h.readAsFile(buf, off)
			b, _ := r.Bytes(buf)
			if len(b) == 0 {
				return string(got)
			}
			got = append(got, b...)
			off += int64(len(b))
		}
	}
	for _, size := range []int{1, 3, 4096} {
		if got := read(5, size); got != "{\"a\":1}\n" {
			t.Errorf("reading from past the question, %d bytes at a time: %q", size, got)
		}
		if got := read(0, size); got != "     {\"a\":1}\n" {
			t.Errorf("reading from offset 0, %d bytes at a time: %q", size, got)
		}
	}
}
