package approvals

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
	"github.com/intentfs/intentfs/policy"
)

// rulesOf parses approval rules from a policy's top-level approvals list.
func rulesOf(t *testing.T, yaml string) []*policy.ApprovalRule {
	t.Helper()
	in, _, err := policy.ParseIntents("p.yaml", []byte("approvals:\n"+yaml+"active_intents:\n"))
	if err != nil {
		t.Fatal(err)
	}
	return (&policy.Snapshot{Intents: in}).ApprovalRulesFor("")
}

// recorder collects what the queue reports.
type recorder struct {
	mu        sync.Mutex
	pending   []Pending
	decisions []Decision
}

func (r *recorder) options() Options {
	return Options{
		OnPending:  func(p Pending) { r.mu.Lock(); r.pending = append(r.pending, p); r.mu.Unlock() },
		OnDecision: func(d Decision) { r.mu.Lock(); r.decisions = append(r.decisions, d); r.mu.Unlock() },
	}
}

// waitEntries waits until n entries wait in g.
func waitEntries(t *testing.T, g *Queue, n int) []Pending {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if l := g.List(); len(l) == n {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries wait, want %d", len(g.List()), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func unlink(pid uint32) Held {
	return Held{Op: policy.OpUnlink, Path: "src/f", Uid: 1000, Pid: pid, Process: &ledger.Process{Pid: pid, Uid: 1000, Comm: "rm"}}
}

func TestRateRuleHoldsTheChangeOverTheCount(t *testing.T) {
	rules := rulesOf(t, "  - {name: mass, ops: [delete], more_than: 3, within: 10s}\n")
	g := New(Options{})
	for i := range 3 {
		if v := g.Hold(context.Background(), unlink(1), rules); !v.Proceed {
			t.Fatalf("deletion %d was not let through: %+v", i+1, v)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Verdict)
	go func() { done <- g.Hold(ctx, unlink(1), rules) }()
	p := waitEntries(t, g, 1)[0]
	if p.Rule != "mass" || p.Op != "unlink" || p.Kind != KindHold {
		t.Fatalf("pending %+v", p)
	}
	cancel()
	if v := <-done; !v.Interrupted {
		t.Fatalf("an interrupted hold got %+v", v)
	}
	if n := len(g.List()); n != 0 {
		t.Fatalf("%d entries left after an interrupt", n)
	}
	if r := g.Recent(); len(r) != 1 || r[0].Verdict != VerdictCancelled {
		t.Fatalf("recent = %+v", r)
	}
}

func TestRateWindowForgets(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	rules := rulesOf(t, "  - {name: mass, ops: [delete], more_than: 2, within: 10s}\n")
	g := New(Options{Now: func() time.Time { return now }})
	for range 2 {
		if v := g.Hold(context.Background(), unlink(1), rules); !v.Proceed {
			t.Fatal("held within the count")
		}
	}
	now = now.Add(11 * time.Second)
	if v := g.Hold(context.Background(), unlink(1), rules); !v.Proceed {
		t.Fatal("a deletion after the window was held")
	}
}

func TestDecisionsAndWhatTheyCover(t *testing.T) {
	rules := rulesOf(t, "  - {name: every, ops: [delete], timeout: 1m}\n")
	rec := &recorder{}
	g := New(rec.options())
	decider := &ledger.Process{Pid: 9, Uid: 0, Comm: "intentfs (alice)"}
	hold := func(pid uint32) chan Verdict {
		ch := make(chan Verdict, 1)
		go func() { ch <- g.Hold(context.Background(), unlink(pid), rules) }()
		return ch
	}

	// A plain approval lets one change through; the next is held again.
	v1 := hold(1)
	p := waitEntries(t, g, 1)[0]
	if ds, err := g.Settle(p.ID, VerdictApproved, "alice", decider, 0, false, ""); err != nil || len(ds) != 1 {
		t.Fatalf("Settle: %v %+v", err, ds)
	}
	if v := <-v1; !v.Proceed {
		t.Fatalf("approved change got %+v", v)
	}
	v2 := hold(1)
	p = waitEntries(t, g, 1)[0]

	// An approval --for covers the rest of the process's burst, the
	// changes of it already waiting included, and no other process's.
	v3 := hold(1)
	waitEntries(t, g, 2)
	ds, err := g.Settle(p.ID, VerdictApproved, "alice", decider, time.Minute, false, "")
	if err != nil || len(ds) != 2 {
		t.Fatalf("Settle --for: %v %+v", err, ds)
	}
	if a, b := <-v2, <-v3; !a.Proceed || !b.Proceed {
		t.Fatalf("covered changes got %+v %+v", a, b)
	}
	if v := g.Hold(context.Background(), unlink(1), rules); !v.Proceed {
		t.Fatal("a change within --for was held")
	}
	v4 := hold(2)
	p = waitEntries(t, g, 1)[0]

	// A denial refuses with its reason, and covers the burst.
	if _, err := g.Settle(p.ID, VerdictDenied, "alice", decider, time.Minute, false, "keep them"); err != nil {
		t.Fatal(err)
	}
	if v := <-v4; v.Proceed || v.Code != CodeDenied || !strings.Contains(v.Reason, "denied by alice: keep them") {
		t.Fatalf("denied change got %+v", v)
	}
	if v := g.Hold(context.Background(), unlink(2), rules); v.Proceed || v.Code != CodeDenied || !strings.Contains(v.Reason, "alice denied it for this process") {
		t.Fatalf("a change within the denial's cover got %+v", v)
	}
	if _, err := g.Settle(p.ID, VerdictApproved, "alice", decider, 0, false, ""); err == nil || !strings.Contains(err.Error(), "not pending") {
		t.Fatalf("deciding twice: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.decisions) != 4 || rec.decisions[3].Verdict != VerdictDenied || rec.decisions[3].ByProcess != decider {
		t.Fatalf("decisions reported: %+v", rec.decisions)
	}
}

func TestTimeoutDenies(t *testing.T) {
	rules := rulesOf(t, "  - {name: every, ops: [delete], timeout: 1s}\n")
	g := New(Options{})
	start := time.Now()
	v := g.Hold(context.Background(), unlink(1), rules)
	if v.Proceed || v.Code != CodeTimedOut || !strings.Contains(v.Reason, "nobody decided within 1s") {
		t.Fatalf("timed-out change got %+v", v)
	}
	if time.Since(start) < time.Second {
		t.Fatal("the hold ended before its timeout")
	}
	// The rest of the burst is refused at once.
	if v := g.Hold(context.Background(), unlink(1), rules); v.Code != CodeDenied || !strings.Contains(v.Reason, "a timeout denied it") {
		t.Fatalf("after a timeout: %+v", v)
	}
}

// TestDenialCoversTheBurstPastItsWindow: once denied, the rest of the
// process's burst is refused even when its rate window has emptied (a
// human who took longer than the window to decide).
func TestDenialCoversTheBurstPastItsWindow(t *testing.T) {
	now := time.Unix(2_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	rules := rulesOf(t, "  - {name: mass, ops: [delete], more_than: 1, within: 1s, timeout: 1h}\n")
	g := New(Options{Now: clock})
	if v := g.Hold(context.Background(), unlink(1), rules); !v.Proceed {
		t.Fatal("the first deletion was held")
	}
	done := make(chan Verdict, 1)
	go func() { done <- g.Hold(context.Background(), unlink(1), rules) }()
	p := waitEntries(t, g, 1)[0]
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if _, err := g.Settle(p.ID, VerdictDenied, "alice", nil, 5*time.Minute, false, ""); err != nil {
		t.Fatal(err)
	}
	<-done
	if v := g.Hold(context.Background(), unlink(1), rules); v.Code != CodeDenied {
		t.Fatalf("the first deletion after the denial, in an empty window, got %+v", v)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if v := g.Hold(context.Background(), unlink(2), rules); !v.Proceed {
		t.Fatalf("another process's first deletion got %+v", v)
	}
}

func TestCapsFailClosed(t *testing.T) {
	rules := rulesOf(t, "  - {name: every, ops: [delete], timeout: 1m}\n")
	g := New(Options{MaxPending: 3, MaxPendingPerUID: 2, MaxRequestsPerUID: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for pid := range uint32(2) {
		wg.Add(1)
		go func() { defer wg.Done(); g.Hold(ctx, unlink(pid+1), rules) }()
	}
	waitEntries(t, g, 2)
	if v := g.Hold(ctx, unlink(3), rules); v.Code != CodeQueueFull {
		t.Fatalf("a uid's third hold got %+v", v)
	}
	other := unlink(4)
	other.Uid = 1001
	wg.Add(1)
	go func() { defer wg.Done(); g.Hold(ctx, other, rules) }()
	waitEntries(t, g, 3)
	other.Uid, other.Pid = 1002, 5
	if v := g.Hold(ctx, other, rules); v.Code != CodeQueueFull {
		t.Fatalf("a hold past the total got %+v", v)
	}
	if _, err := g.Request(1003, Pending{Intent: "INT-001", Paths: []string{"x"}, Why: "w"}); err == nil {
		t.Fatal("a request past the total was filed")
	}
	cancel()
	wg.Wait()
	if _, err := g.Request(1003, Pending{Intent: "INT-001", Paths: []string{"x"}, Why: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Request(1003, Pending{Intent: "INT-001", Paths: []string{"y"}, Why: "w"}); err == nil {
		t.Fatal("a uid's second request was filed")
	}
}

func TestLargerThanAsksForTheSize(t *testing.T) {
	rules := rulesOf(t, "  - {name: big, ops: [delete], larger_than: 1KiB, timeout: 1s}\n")
	g := New(Options{})
	small := unlink(1)
	small.Size = func() (int64, bool) { return 1024, true }
	if v := g.Hold(context.Background(), small, rules); !v.Proceed {
		t.Fatal("a 1 KiB deletion was held by a rule on larger than 1 KiB")
	}
	big := unlink(1)
	big.Size = func() (int64, bool) { return 1025, true }
	if v := g.Hold(context.Background(), big, rules); v.Code != CodeTimedOut {
		t.Fatalf("a larger deletion got %+v", v)
	}
}

func TestRateMemoryIsBounded(t *testing.T) {
	g := New(Options{})
	for i := range maxRateWindows + 10 {
		rules := rulesOf(t, "  - {name: r"+strconv.Itoa(i)+", ops: [delete], more_than: 5, within: 1s}\n")
		g.Hold(context.Background(), unlink(1), rules)
	}
	if n := len(g.rates); n > maxRateWindows {
		t.Fatalf("%d rate windows kept", n)
	}
}

// TestRulesOnDeletionsHoldWhatDestroys: a rule on deleting files holds
// every change that destroys a file's content, whatever its operation,
// with larger_than measured on what it destroys; a change of the same
// operation that destroys nothing passes.
func TestRulesOnDeletionsHoldWhatDestroys(t *testing.T) {
	rules := rulesOf(t, "  - {name: big, ops: [delete], larger_than: 1KiB, timeout: 1s}\n")
	cases := []struct {
		name     string
		op       policy.Op
		destroys bool
		size     int64
		held     bool
	}{
		{"truncation cutting 2 KiB", policy.OpTruncate, true, 2048, true},
		{"truncation cutting 100 bytes", policy.OpTruncate, true, 100, false},
		{"O_TRUNC open of 4 KiB", policy.OpOpenWrite, true, 4096, true},
		{"rename over 4 KiB", policy.OpRename, true, 4096, true},
		{"open for writing, nothing destroyed", policy.OpOpenWrite, false, 4096, false},
		{"rename onto a free name", policy.OpRename, false, 4096, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // a held change waits out the rule's timeout
			g := New(Options{})
			h := Held{Op: c.op, Path: "src/f", Path2: "src/g", Uid: 1000, Pid: 1, Destroys: c.destroys,
				Size: func() (int64, bool) { return c.size, true }}
			v := g.Hold(context.Background(), h, rules)
			if held := !v.Proceed; held != c.held {
				t.Fatalf("held = %v (%+v), want %v", held, v, c.held)
			}
		})
	}
}

func TestWouldHoldReportsWithoutHolding(t *testing.T) {
	rules := rulesOf(t, "  - {name: deletes, ops: [delete], paths: [\"src/**\"]}\n  - {name: mass, ops: [write], more_than: 2, within: 10s}\n")
	write := Held{Op: policy.OpOpenWrite, Path: "docs/a", Uid: 1000, Pid: 1}
	tests := []struct {
		name string
		h    Held
		want string
	}{
		{"a covered deletion", unlink(1), "deletes"},
		{"an uncovered deletion", Held{Op: policy.OpUnlink, Path: "docs/f", Uid: 1000, Pid: 1}, ""},
		{"first write of a burst", write, ""},
		{"second write of a burst", write, ""},
		{"third write of a burst", write, "mass"},
	}
	g := New(Options{})
	for _, tt := range tests {
		got := ""
		if r := g.WouldHold(tt.h, rules); r != nil {
			got = r.Name
		}
		if got != tt.want {
			t.Errorf("%s: rule %q, want %q", tt.name, got, tt.want)
		}
	}
	if n := len(g.List()); n != 0 {
		t.Fatalf("%d entries wait after WouldHold, want none", n)
	}
}

// TestMoveOutCountsEachRemoval: a move out of the governed tree is, for
// the rules on deletions, the removal of each governed entry it takes
// along: a count rule counts each of them (those under its paths), and
// larger_than sees the bytes they add up to.
func TestMoveOutCountsEachRemoval(t *testing.T) {
	bulk := []policy.Removal{
		{Path: "src/bulk/a", Size: 600}, {Path: "src/bulk/b", Size: 600},
		{Path: "src/bulk/sub/c", Size: 600}, {Path: "src/bulk/sub", IsDir: true}, {Path: "src/bulk", IsDir: true},
	}
	cases := []struct {
		name    string
		rule    string
		removes []policy.Removal
		held    bool
	}{
		{"count rule sees every file and directory", "{name: mass, ops: [delete], more_than: 4, within: 10s, timeout: 1s}", bulk, true},
		{"count rule below its count", "{name: mass, ops: [delete], more_than: 5, within: 10s, timeout: 1s}", bulk, false},
		{"count rule on files only", "{name: mass, ops: [unlink], more_than: 2, within: 10s, timeout: 1s}", bulk, true},
		{"count rule on directories only", "{name: mass, ops: [rmdir], more_than: 2, within: 10s, timeout: 1s}", bulk, false},
		{"count rule counts only its paths", "{name: mass, ops: [delete], more_than: 1, within: 10s, paths: [\"src/bulk/sub/**\"], timeout: 1s}", bulk, true},
		{"count rule whose paths it misses", "{name: mass, ops: [delete], paths: [\"docs/**\"], timeout: 1s}", bulk, false},
		{"larger_than on the bytes destroyed in all", "{name: big, ops: [delete], larger_than: 1KiB, timeout: 1s}", bulk, true},
		{"larger_than above them", "{name: big, ops: [delete], larger_than: 2KiB, timeout: 1s}", bulk, false},
		{"a rule on rename holds it as a rename", "{name: mv, ops: [rename], timeout: 1s}", bulk, true},
		{"a single file moved out is its unlink", "{name: del, ops: [delete], timeout: 1s}", []policy.Removal{{Path: "src/c.txt", Size: 3}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // a held change waits out the rule's timeout
			g := New(Options{})
			h := Held{Op: policy.OpRename, Path: "src/bulk", Path2: "build/bulk", Uid: 1000, Pid: 1, Destroys: true, Removes: c.removes}
			v := g.Hold(context.Background(), h, rulesOf(t, "  - "+c.rule+"\n"))
			if held := !v.Proceed; held != c.held {
				t.Fatalf("held = %v (%+v), want %v", held, v, c.held)
			}
		})
	}
}

// TestKilledCallerEndsItsHold: a caller killed while its change is held
// ends the hold as cancelled although its request's context never ends
// (the kernel sent no interrupt); a live caller is left waiting.
func TestKilledCallerEndsItsHold(t *testing.T) {
	rules := rulesOf(t, "  - {name: every, ops: [delete], timeout: 1m}\n")
	var mu sync.Mutex
	killed := map[uint32]bool{}
	rec := &recorder{}
	o := rec.options()
	o.KilledPoll = 5 * time.Millisecond
	o.CallerKilled = func(pid uint32) bool { mu.Lock(); defer mu.Unlock(); return killed[pid] }
	g := New(o)
	done := map[uint32]chan Verdict{7: make(chan Verdict, 1), 8: make(chan Verdict, 1)}
	for pid, ch := range done {
		go func() { ch <- g.Hold(context.Background(), unlink(pid), rules) }()
	}
	waitEntries(t, g, 2)
	mu.Lock()
	killed[7] = true
	mu.Unlock()
	select {
	case v := <-done[7]:
		if !v.Interrupted {
			t.Fatalf("the killed caller's hold got %+v", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the killed caller's hold did not end")
	}
	l := waitEntries(t, g, 1)
	if l[0].Process.Pid != 8 {
		t.Fatalf("left waiting: %+v", l[0])
	}
	rec.mu.Lock()
	ds := rec.decisions
	rec.mu.Unlock()
	if len(ds) != 1 || ds[0].Verdict != VerdictCancelled || ds[0].Pending.Process.Pid != 7 || !strings.Contains(ds[0].Reason, "killed") {
		t.Fatalf("decisions %+v", ds)
	}
	if _, err := g.Settle(l[0].ID, VerdictApproved, "alice", nil, 0, false, ""); err != nil {
		t.Fatal(err)
	}
	if v := <-done[8]; !v.Proceed {
		t.Fatalf("the approved caller got %+v", v)
	}
}
