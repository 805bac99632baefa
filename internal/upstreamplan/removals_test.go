package upstreamplan

import (
	"fmt"
	"testing"
	"time"
)

// removal stands for what the mount keeps to put a file back.
type removal struct{ hash string }

// sinkFile stands for the handle of a file git creates.
type sinkFile struct{ name string }

// TestRemovals: removals are kept by path, watched once per git process,
// taken once, due after RemovalFor or when git ends, refused during a
// path's cooldown or from a git process that left one incomplete and,
// never forgotten, past the bound; a directory above one is busy.
func TestRemovals(t *testing.T) {
	var u Removals[removal, *sinkFile]
	now := time.Now()
	steps := []struct {
		name  string
		rel   string
		pid   uint32
		at    time.Time
		start bool
	}{
		{"first removal by git 10 starts its watch", "docs/a", 10, now, true},
		{"a second removal by git 10 does not", "docs/b", 10, now.Add(-RemovalFor), false},
		{"git 11 gets a watch of its own", "c", 11, now, true},
	}
	for _, s := range steps {
		start, why := u.Put(s.rel, s.pid, s.at, removal{hash: "h" + s.rel})
		if start != s.start || why != "" {
			t.Fatalf("%s: Put = (%v, %q), want (%v, \"\")", s.name, start, why, s.start)
		}
	}
	if p := u.PendingUnder("docs"); p == "" {
		t.Fatal("docs is not busy with removals below it")
	}
	if p := u.PendingUnder("doc"); p != "" {
		t.Fatalf("doc is busy with %s", p)
	}
	if p := u.PendingUnder(""); p == "" {
		t.Fatal("the root is not busy with removals below it")
	}
	if rm, ok := u.Take("c"); !ok || rm.hash != "hc" {
		t.Fatalf("Take c = %+v, %v", rm, ok)
	}
	u.Settled()
	if _, ok := u.Take("c"); ok {
		t.Fatal("c was taken twice")
	}
	// Only docs/b has waited its time: git 10 still has docs/a.
	due, done := u.Due(10, false, false, now)
	if len(due) != 1 || due["docs/b"].hash != "hdocs/b" || done {
		t.Fatalf("Due for live git 10 = %v, done %v", due, done)
	}
	u.Settled()
	// git 10 ends: the rest is due, and its watch ends.
	if due, done = u.Due(10, true, false, now); len(due) != 1 || due["docs/a"].hash != "hdocs/a" || !done {
		t.Fatalf("Due for ended git 10 = %v, done %v", due, done)
	}
	u.Settled()
	if start, _ := u.Put("d", 10, now, removal{hash: "h"}); !start {
		t.Fatal("a removal after its watch ended does not start a new one")
	}
	if why := u.BarredWhy(13); why != "" {
		t.Fatalf("git 13 is barred before it left a removal incomplete: %s", why)
	}
	u.Cool("docs/a", 13)
	if _, why := u.Put("docs/a", 12, now, removal{hash: "h"}); why == "" {
		t.Fatal("a path put back was removed again during its cooldown")
	}
	if why := u.BarredWhy(13); why == "" {
		t.Fatal("a git process that left a removal incomplete is not barred")
	}
	if _, why := u.Put("docs/z", 13, now, removal{hash: "h"}); why == "" {
		t.Fatal("a git process that left a removal incomplete removed another file")
	}
	for i := len(u.pending); i < MaxPending; i++ {
		if _, why := u.Put(fmt.Sprint("f", i), 12, now, removal{hash: "h"}); why != "" {
			t.Fatalf("removal %d refused below the bound: %s", i, why)
		}
	}
	if _, why := u.Put("over", 12, now, removal{hash: "h"}); why == "" {
		t.Fatal("a removal past the bound was kept")
	}
	if len(u.pending) != MaxPending || u.pending["d"].rm.hash != "h" {
		t.Fatalf("removals were forgotten at the bound: %d kept", len(u.pending))
	}
	if all, done := u.Due(0, false, true, now); len(all) != MaxPending || len(u.pending) != 0 || len(u.watched) != 0 || !done {
		t.Fatalf("Due of all: %d, %d left, %d watched", len(all), len(u.pending), len(u.watched))
	}
	for range MaxPending {
		u.Settled()
	}
	u.Wait()
}

// TestRemovalsCooldownBound: a cooldown ends, and past the bound the
// oldest bars and cooldowns give way rather than the map growing.
func TestRemovalsCooldownBound(t *testing.T) {
	var u Removals[removal, *sinkFile]
	u.Cool("a", 1)
	u.cooldown["a"] = time.Now().Add(-time.Second) // its minute is over
	if _, why := u.Put("a", 2, time.Now(), removal{}); why != "" {
		t.Fatalf("a path whose cooldown ended was refused: %s", why)
	}
	for i := range MaxPending + 5 {
		u.Cool(fmt.Sprint("p", i), uint32(100+i))
	}
	if len(u.cooldown) > MaxPending || len(u.barred) > MaxPending {
		t.Fatalf("past the bound: %d cooldowns, %d barred", len(u.cooldown), len(u.barred))
	}
	if why := u.BarredWhy(uint32(100 + MaxPending + 4)); why == "" {
		t.Fatal("the latest git process to leave a removal incomplete is not barred")
	}
	if _, why := u.Put("new", 3, time.Now(), removal{}); why == "" {
		t.Fatal("a removal was kept while every cooldown slot is in its minute")
	}
}

// TestRemovalsSinks: one file at a time is created at a path; one kept
// open past SinkFor neither blocks another nor busies its directories;
// a dropped one is forgotten; the number is bounded.
func TestRemovalsSinks(t *testing.T) {
	now := time.Now()
	stale := now.Add(-SinkFor)
	cases := []struct {
		name     string
		existing []sink // created before, one file each
		rel      string
		wantWhy  bool
		busyDir  string // a directory PendingUnder must name afterwards ("" none)
		freeDir  string // one it must not
	}{
		{name: "first at its path", rel: "docs/a", busyDir: "docs", freeDir: "doc"},
		{name: "a second at the same path", existing: []sink{{"docs/a", now}}, rel: "docs/a", wantWhy: true, busyDir: "docs"},
		{name: "after one kept open too long", existing: []sink{{"docs/a", stale}}, rel: "docs/a", busyDir: "docs"},
		{name: "one kept open too long busies nothing", existing: []sink{{"x/a", stale}}, rel: "y/b", busyDir: "y", freeDir: "x"},
		{name: "another path beside", existing: []sink{{"docs/a", now}}, rel: "docs/b", busyDir: "docs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var u Removals[removal, *sinkFile]
			for _, e := range c.existing {
				if why := u.AddSink(&sinkFile{e.rel}, e.rel, e.created); why != "" {
					t.Fatalf("setting up %s: %s", e.rel, why)
				}
			}
			f := &sinkFile{c.rel}
			why := u.AddSink(f, c.rel, now)
			if (why != "") != c.wantWhy {
				t.Fatalf("AddSink(%s) = %q, want refusal %v", c.rel, why, c.wantWhy)
			}
			if c.busyDir != "" && u.PendingUnder(c.busyDir) == "" {
				t.Fatalf("%s is not busy", c.busyDir)
			}
			if c.freeDir != "" && u.PendingUnder(c.freeDir) != "" {
				t.Fatalf("%s is busy", c.freeDir)
			}
			if why == "" {
				u.DropSink(f)
				if p := u.PendingUnder(""); p == c.rel && len(c.existing) == 0 {
					t.Fatalf("%s is still pending after DropSink", p)
				}
			}
		})
	}
	var u Removals[removal, *sinkFile]
	for i := range MaxPending {
		rel := fmt.Sprint("f", i)
		if why := u.AddSink(&sinkFile{rel}, rel, now); why != "" {
			t.Fatalf("file %d refused below the bound: %s", i, why)
		}
	}
	if why := u.AddSink(&sinkFile{"over"}, "over", now); why == "" {
		t.Fatal("a file past the bound was kept")
	}
}
