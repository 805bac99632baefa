package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// daemonFds makes the descriptor targets of a daemon serving /src: base
// descriptors that are not cache entries (the FUSE device, the control
// socket, the log), cached handles of live paths, and extra targets.
func daemonFds(base, live int, extra ...string) []string {
	var ts []string
	for i := range base {
		ts = append(ts, fmt.Sprintf("socket:[%d]", 1000+i))
	}
	for i := range live {
		ts = append(ts, fmt.Sprintf("/src/agent%d/f%03d", i%4, i))
	}
	return append(ts, extra...)
}

// processHandles makes the targets of n processes' pidfds, and of their
// /proc directories too if withDirs.
func processHandles(n int, withDirs bool) []string {
	var ts []string
	for i := range n {
		ts = append(ts, "anon_inode:[pidfd]")
		if withDirs {
			ts = append(ts, fmt.Sprintf("/proc/%d (deleted)", 30000+i))
		}
	}
	return ts
}

func repeat(n int, f func(i int) string) []string {
	var out []string
	for i := range n {
		out = append(out, f(i))
	}
	return out
}

func TestJudgeFds(t *testing.T) {
	exists := func(p string) bool { return !strings.Contains(p, "/gone/") }
	tests := []struct {
		name            string
		before, settled []string
		want            string
	}{
		// The two counts read in CI as growth: 152 → 214 (allowed +70)
		// and 168 → 250. The rise is handles of the trees' nodes the
		// kernel still knows, each of a live path: no leak.
		{"152 → 214, cache entries of live paths", daemonFds(30, 122), daemonFds(30, 184), "flat"},
		{"168 → 250, cache entries of live paths", daemonFds(30, 138), daemonFds(32, 218), "flat"},
		// Back to where it started: the forgets came.
		{"back to the start", daemonFds(30, 5), daemonFds(30, 5), "flat"},
		// A few more fixed descriptors (a ledger segment opened) are
		// within the slack.
		{"a few more fixed descriptors", daemonFds(30, 5), daemonFds(30+fdLeakSlack, 5), "flat"},
		// A descriptor left open per removed tree: handles of deleted
		// paths.
		{"handles of removed paths", daemonFds(30, 122), daemonFds(30, 122,
			repeat(62, func(i int) string { return fmt.Sprintf("/src/agent1/work/tree/d%02d (deleted)", i) })...), "leaking"},
		// The same, where the kernel's link does not say deleted.
		{"handles of paths that are gone", daemonFds(30, 122), daemonFds(30, 122,
			repeat(62, func(i int) string { return fmt.Sprintf("/src/gone/d%02d", i) })...), "leaking"},
		// A descriptor opened per operation on a live path and never
		// closed: the same path held many times.
		{"the same live path held again and again", daemonFds(30, 122), daemonFds(30, 122,
			repeat(100, func(int) string { return "/src/agent1/notes.txt" })...), "leaking"},
		// A pipe or socket per session or request, never closed.
		{"pipes", daemonFds(30, 5), daemonFds(30, 5, repeat(40, func(i int) string { return fmt.Sprintf("pipe:[%d]", i) })...), "leaking"},
		// What the soak read in CI once the work had settled: the
		// process cache holding 64 exited processes (a pidfd and a /proc
		// directory each) until its next sweep, within its bound.
		{"the process cache's exited processes", daemonFds(14, 5), daemonFds(15, 40, processHandles(64, true)...), "flat"},
		// Process handles beyond the process cache's bound: a pidfd or
		// /proc handle left open per process.
		{"process handles beyond the cache's bound", daemonFds(14, 5), daemonFds(14, 5, processHandles(200, true)...), "leaking"},
		{"pidfds beyond the cache's bound", daemonFds(14, 5), daemonFds(14, 5, processHandles(160, false)...), "leaking"},
		// go-fuse's splice pairs: both ends of each pipe in the daemon,
		// as many as READs were in flight at once; and beyond any such
		// count, a leak.
		{"splice pairs of READs in flight", daemonFds(13, 5), daemonFds(13, 5, splicePairs(8)...), "flat"},
		{"splice pairs beyond the READs in flight", daemonFds(13, 5), daemonFds(13, 5, splicePairs(200)...), "leaking"},
		// A pipe to a child still running, one per command: a leak.
		{"pipes to children", daemonFds(13, 5), daemonFds(13, 5, repeat(40, func(i int) string { return fmt.Sprintf("pipe:[%d] to git", i) })...), "leaking"},
		// A path outside the source is no cache entry.
		{"outside the source", daemonFds(30, 5), daemonFds(30, 5, repeat(40, func(i int) string { return fmt.Sprintf("/srcother/f%d", i) })...), "leaking"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judgeFds(censusOf(tt.before, "/src", 128, exists), censusOf(tt.settled, "/src", 128, exists))
			if v.Verdict != tt.want {
				t.Errorf("verdict %q (unexplained %d → %d of %d → %d), want %q", v.Verdict,
					v.Before.Unexplained(), v.Settled.Unexplained(), v.Before.Total, v.Settled.Total, tt.want)
			}
		})
	}
}

// takeFdCensus reads a real process's descriptors: this test's own, with
// a directory's files held open once each (cache entries) and then one
// file held many times (a leak).
func TestTakeFdCensus(t *testing.T) {
	src := t.TempDir()
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	open := func(name string) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(src, name), os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	before, err := takeFdCensus(os.Getpid(), src, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		open(fmt.Sprintf("f%d", i))
	}
	cached, err := takeFdCensus(os.Getpid(), src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cached.Cached != before.Cached+30 || judgeFds(before, cached).Verdict != "flat" {
		t.Errorf("30 live files held once: cached %d → %d, verdict %q", before.Cached, cached.Cached, judgeFds(before, cached).Verdict)
	}
	for range 30 {
		open("f0")
	}
	leaked, err := takeFdCensus(os.Getpid(), src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if v := judgeFds(before, leaked); v.Verdict != "leaking" {
		t.Errorf("one file held 31 times: unexplained %d → %d, verdict %q", before.Unexplained(), leaked.Unexplained(), v.Verdict)
	}
}

// splicePairs is n pipes with both ends open, as go-fuse's splice pool
// holds them.
func splicePairs(n int) []string {
	var out []string
	for i := range n {
		p := fmt.Sprintf("pipe:[%d]", 9000+i)
		out = append(out, p, p)
	}
	return out
}
