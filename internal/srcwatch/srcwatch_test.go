package srcwatch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// newWatcher watches a fresh directory beside a sibling it must not
// report, or skips where fanotify cannot report by handle (not root).
func newWatcher(t *testing.T) (w *Watcher, root, sibling string, events func() []Event) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, sibling = filepath.Join(base, "root"), filepath.Join(base, "sibling")
	for _, d := range []string{root, sibling, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if w, err = New(root); err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("skipping: %v (needs root)", err)
		}
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var got []Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, func(evs []Event) { mu.Lock(); got = append(got, evs...); mu.Unlock() })
	}()
	t.Cleanup(func() { cancel(); <-done; w.Close() })
	return w, root, sibling, func() []Event { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }
}

// waitEvent polls until an event like want has been reported.
func waitEvent(t *testing.T, events func() []Event, want Event) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range events() {
			if e.Kind == want.Kind && e.Dir == want.Dir && e.Name == want.Name {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no event %+v; got %+v", want, events())
}

func TestReportsChangesUnderRootByDirectoryAndName(t *testing.T) {
	_, root, sibling, events := newWatcher(t)
	steps := []struct {
		name string
		do   func() error
		want Event
	}{
		{"create in root", func() error { return os.WriteFile(filepath.Join(root, "a"), []byte("x"), 0o644) }, Event{Kind: Entry, Name: "a"}},
		{"write in a subdirectory", func() error {
			return os.WriteFile(filepath.Join(root, "sub", "b"), []byte("x"), 0o644)
		}, Event{Kind: Content, Dir: "sub", Name: "b"}},
		{"chmod", func() error { return os.Chmod(filepath.Join(root, "a"), 0o600) }, Event{Kind: Attr, Name: "a"}},
		{"chmod of a directory", func() error { return os.Chmod(filepath.Join(root, "sub"), 0o700) }, Event{Kind: Attr, Dir: "sub"}},
		{"remove", func() error { return os.Remove(filepath.Join(root, "a")) }, Event{Kind: Entry, Name: "a"}},
		{"directory moved", func() error { return os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "moved")) }, Event{Kind: Entry, Name: "moved"}},
		// Paths remembered for a moved directory's handle are dropped.
		{"create in the moved directory", func() error {
			return os.WriteFile(filepath.Join(root, "moved", "c"), nil, 0o644)
		}, Event{Kind: Entry, Dir: "moved", Name: "c"}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		waitEvent(t, events, s.want)
	}
	// Nothing outside root is reported: a change in the sibling, then
	// one in root as a marker that the first was read.
	if err := os.WriteFile(filepath.Join(sibling, "outside"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "marker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, Event{Kind: Entry, Name: "marker"})
	for _, e := range events() {
		if e.Name == "outside" || e.Dir == ".." {
			t.Fatalf("reported a change outside the watched directory: %+v", e)
		}
	}
}

func TestDecodeDropsTruncatedRecords(t *testing.T) {
	w := &Watcher{dirs: map[string]string{}}
	for _, b := range [][]byte{
		nil,
		make([]byte, 10),
		// event_len larger than the buffer
		{200, 0, 0, 0, 3, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0},
		// an info record whose length runs past the event
		append([]byte{32, 0, 0, 0, 3, 0, 24, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0}, 2, 0, 200, 0, 0, 0, 0, 0),
	} {
		if evs := w.decode(b); len(evs) != 0 {
			t.Fatalf("decode(%v) = %+v, want nothing", b, evs)
		}
	}
}
