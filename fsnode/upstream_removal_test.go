package fsnode

import (
	"fmt"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
)

// TestUpstreamRemovals: removals are kept by path, watched once per git
// process, taken once, due after upstreamRemovalFor or when git ends,
// refused during a path's cooldown or from a git process that left one
// incomplete and, never forgotten, past the bound;
// a directory above one is busy.
func TestUpstreamRemovals(t *testing.T) {
	var u upstreamRemovals
	now := time.Now()
	by := func(pid uint32, at time.Time) upstreamRemoval {
		return upstreamRemoval{hash: "h", at: at, g: grant{proc: &ledger.Process{Pid: pid}}, held: -1}
	}
	steps := []struct {
		name  string
		rel   string
		pid   uint32
		at    time.Time
		start bool
	}{
		{"first removal by git 10 starts its watch", "docs/a", 10, now, true},
		{"a second removal by git 10 does not", "docs/b", 10, now.Add(-upstreamRemovalFor), false},
		{"git 11 gets a watch of its own", "c", 11, now, true},
	}
	for _, s := range steps {
		start, why := u.put(s.rel, s.pid, by(s.pid, s.at))
		if start != s.start || why != "" {
			t.Fatalf("%s: put = (%v, %q), want (%v, \"\")", s.name, start, why, s.start)
		}
	}
	if p := u.pendingUnder("docs"); p == "" {
		t.Fatal("docs is not busy with removals below it")
	}
	if p := u.pendingUnder("doc"); p != "" {
		t.Fatalf("doc is busy with %s", p)
	}
	if rm, ok := u.take("c"); !ok || rm.g.proc.Pid != 11 {
		t.Fatalf("take c = %+v, %v", rm, ok)
	}
	u.busy.Done()
	if _, ok := u.take("c"); ok {
		t.Fatal("c was taken twice")
	}
	// Only docs/b has waited its time: git 10 still has docs/a.
	due, done := u.due(10, false, false, now)
	if len(due) != 1 || due["docs/b"].hash != "h" || done {
		t.Fatalf("due for live git 10 = %v, done %v", due, done)
	}
	u.busy.Done()
	// git 10 ends: the rest is due, and its watch ends.
	if due, done = u.due(10, true, false, now); len(due) != 1 || !done {
		t.Fatalf("due for ended git 10 = %v, done %v", due, done)
	}
	u.busy.Done()
	if start, _ := u.put("d", 10, by(10, now)); !start {
		t.Fatal("a removal after its watch ended does not start a new one")
	}
	u.cool("docs/a", 13)
	if _, why := u.put("docs/a", 12, by(12, now)); why == "" {
		t.Fatal("a path put back was removed again during its cooldown")
	}
	if _, why := u.put("docs/z", 13, by(13, now)); why == "" {
		t.Fatal("a git process that left a removal incomplete removed another file")
	}
	for i := len(u.m); i < maxUpstreamRemovals; i++ {
		if _, why := u.put(fmt.Sprint("f", i), 12, by(12, now)); why != "" {
			t.Fatalf("removal %d refused below the bound: %s", i, why)
		}
	}
	if _, why := u.put("over", 12, by(12, now)); why == "" {
		t.Fatal("a removal past the bound was kept")
	}
	if len(u.m) != maxUpstreamRemovals || u.m["d"].hash != "h" {
		t.Fatalf("removals were forgotten at the bound: %d kept", len(u.m))
	}
	if all, done := u.due(0, false, true, now); len(all) != maxUpstreamRemovals || len(u.m) != 0 || len(u.watched) != 0 || !done {
		t.Fatalf("due of all: %d, %d left, %d watched", len(all), len(u.m), len(u.watched))
	}
}
