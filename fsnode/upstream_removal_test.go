package fsnode

import (
	"fmt"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
)

// TestUpstreamRemovals: removals are kept by path, watched once per git
// process, taken once, swept per process, and refused, never forgotten,
// past the bound.
func TestUpstreamRemovals(t *testing.T) {
	var u upstreamRemovals
	by := func(pid uint32) upstreamRemoval {
		return upstreamRemoval{hash: "h", at: time.Now(), g: grant{proc: &ledger.Process{Pid: pid}}}
	}
	steps := []struct {
		name      string
		rel       string
		pid       uint32
		start, ok bool
	}{
		{"first removal by git 10 starts its watch", "a", 10, true, true},
		{"a second removal by git 10 does not", "b", 10, false, true},
		{"git 11 gets a watch of its own", "c", 11, true, true},
		{"the same path again replaces the removal", "a", 10, false, true},
	}
	for _, s := range steps {
		start, ok := u.put(s.rel, s.pid, by(s.pid))
		if start != s.start || ok != s.ok {
			t.Fatalf("%s: put = (%v, %v), want (%v, %v)", s.name, start, ok, s.start, s.ok)
		}
	}
	if rm, ok := u.take("c"); !ok || rm.g.proc.Pid != 11 {
		t.Fatalf("take c = %+v, %v", rm, ok)
	}
	u.busy.Done()
	if _, ok := u.take("c"); ok {
		t.Fatal("c was taken twice")
	}
	swept := u.sweep(10, false)
	if len(swept) != 2 || swept["a"].hash != "h" || swept["b"].hash != "h" {
		t.Fatalf("sweep of git 10 = %v", swept)
	}
	for range swept {
		u.busy.Done()
	}
	if start, _ := u.put("d", 10, by(10)); !start {
		t.Fatal("a removal after its watch ended does not start a new one")
	}
	for i := len(u.m); i < maxUpstreamRemovals; i++ {
		if _, ok := u.put(fmt.Sprint("f", i), 12, by(12)); !ok {
			t.Fatalf("removal %d refused below the bound", i)
		}
	}
	if _, ok := u.put("over", 12, by(12)); ok {
		t.Fatal("a removal past the bound was kept")
	}
	if len(u.m) != maxUpstreamRemovals || u.m["d"].hash != "h" {
		t.Fatalf("removals were forgotten at the bound: %d kept", len(u.m))
	}
	if all := u.sweep(0, true); len(all) != maxUpstreamRemovals || len(u.m) != 0 || len(u.watched) != 0 {
		t.Fatalf("sweep of all: %d swept, %d left, %d watched", len(all), len(u.m), len(u.watched))
	}
}
