package fsnode

import (
	"syscall"
	"testing"
	"time"
)

func TestProvisionalTableShareAndIdentity(t *testing.T) {
	tbl := newProvisionalTable(time.Second, time.Minute, 2)
	st := func(ino uint64) *syscall.Stat_t {
		return &syscall.Stat_t{Dev: 1, Ino: ino, Mode: syscall.S_IFREG | 0o644, Nlink: 1}
	}
	now := time.Now()
	if start := tbl.add(&provisionalFile{rel: "a", owner: "s1", created: now}, st(1)); !start {
		t.Error("the first provisional file does not start the sweeper")
	}
	if start := tbl.add(&provisionalFile{rel: "b", owner: "s1", created: now}, st(2)); start {
		t.Error("a second provisional file starts another sweeper")
	}
	if tbl.hasRoom("s1") {
		t.Error("s1 has room beyond its share of 2")
	}
	if !tbl.hasRoom("s2") {
		t.Error("another owner has no room")
	}
	tests := []struct {
		name string
		rel  string
		st   *syscall.Stat_t
		want bool
	}{
		{"the file itself", "a", st(1), true},
		{"another file at its name", "a", st(3), false},
		{"another device", "a", &syscall.Stat_t{Dev: 2, Ino: 1, Mode: syscall.S_IFREG, Nlink: 1}, false},
		{"a second name of it", "a", &syscall.Stat_t{Dev: 1, Ino: 1, Mode: syscall.S_IFREG, Nlink: 2}, false},
		{"a directory", "a", &syscall.Stat_t{Dev: 1, Ino: 1, Mode: syscall.S_IFDIR, Nlink: 1}, false},
		{"a name never provisional", "c", st(1), false},
	}
	for _, tt := range tests {
		if got := tbl.holdsStat(tt.rel, tt.st); got != tt.want {
			t.Errorf("%s: holdsStat = %v, want %v", tt.name, got, tt.want)
		}
	}
	tbl.drop("a", 1, 3) // not the file: kept
	if !tbl.holdsStat("a", st(1)) {
		t.Error("drop of another file at the name dropped the provisional one")
	}
	tbl.drop("a", 1, 1)
	if tbl.holdsStat("a", st(1)) || !tbl.hasRoom("s1") {
		t.Error("drop did not forget the file and give its share back")
	}
}

func TestProvisionalTableWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	open := &Node{}
	open.handles.Store(1)
	tests := []struct {
		name string
		node *Node
		// sweeps are the times due is asked at; the file is due at the
		// last one only, if want.
		sweeps []time.Duration
		all    bool
		want   bool
	}{
		{"closed, idle for less than the window", nil, []time.Duration{0, 4 * time.Second}, false, false},
		{"closed, idle for the window", nil, []time.Duration{0, 5 * time.Second}, false, true},
		{"idle counts from when no handle was seen", nil, []time.Duration{3 * time.Second, 7 * time.Second}, false, false},
		{"open, past the idle window", open, []time.Duration{0, 30 * time.Second}, false, false},
		{"open, past its whole life", open, []time.Duration{0, 10 * time.Minute}, false, true},
		{"at unmount, whatever is open", open, []time.Duration{0}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := newProvisionalTable(5*time.Second, 10*time.Minute, 64)
			tbl.add(&provisionalFile{rel: "tmp", owner: "s", node: tt.node, created: t0}, &syscall.Stat_t{Dev: 1, Ino: 1})
			var got []*provisionalFile
			for i, at := range tt.sweeps {
				got = tbl.due(t0.Add(at), tt.all && i == len(tt.sweeps)-1)
				if len(got) > 0 && i < len(tt.sweeps)-1 {
					t.Fatalf("due at %v, before the window ended", at)
				}
			}
			if (len(got) == 1) != tt.want {
				t.Errorf("due = %d files, want due %v", len(got), tt.want)
			}
			if tt.want && tbl.holds("tmp", 1, 1) {
				t.Error("a due file is still in the table")
			}
		})
	}
}

func TestProvisionalTableOfOwner(t *testing.T) {
	tbl := newProvisionalTable(time.Second, time.Minute, 64)
	for i, owner := range []string{"session a", "session b", "session a", "uid 1000"} {
		tbl.add(&provisionalFile{rel: string(rune('p' + i)), owner: owner}, &syscall.Stat_t{Dev: 1, Ino: uint64(i + 1)})
	}
	if got := tbl.ofOwner("session a"); len(got) != 2 {
		t.Errorf("session a has %d provisional files, want 2", len(got))
	}
	if got := tbl.ofOwner("session a"); len(got) != 0 {
		t.Errorf("session a's files were not forgotten: %d left", len(got))
	}
	if len(tbl.byRel) != 2 || tbl.perOwner["session a"] != 0 {
		t.Errorf("other owners' files: %d, session a's share %d", len(tbl.byRel), tbl.perOwner["session a"])
	}
}

func TestProvisionalTableAdopt(t *testing.T) {
	tbl := newProvisionalTable(time.Second, time.Minute, 64)
	st := &syscall.Stat_t{Dev: 1, Ino: 7, Mode: syscall.S_IFREG, Nlink: 1}
	tbl.add(&provisionalFile{rel: "notes.md", owner: "session a"}, st)
	tbl.adopt("other.md")
	if !tbl.holdsStat("notes.md", st) {
		t.Fatal("adopting another name forgot notes.md")
	}
	tbl.adopt("notes.md")
	if tbl.holdsStat("notes.md", st) || tbl.perOwner["session a"] != 0 {
		t.Error("an adopted file is still provisional")
	}
	if got := tbl.due(time.Now().Add(time.Hour), true); len(got) != 0 {
		t.Errorf("an adopted file is due for removal: %d", len(got))
	}
}
