package feed

import (
	"testing"
	"time"
)

func TestPublishNeverWaitsAndCountsWhatItDrops(t *testing.T) {
	var h Hub
	if h.Active() {
		t.Fatal("a hub without watchers is active")
	}
	h.Publish(Event{Kind: KindChange}) // nobody watches: nothing happens
	sub, cancel, err := h.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	start := time.Now()
	for i := range Buffer + 5 {
		h.Publish(Event{Kind: KindChange, Path: string(rune('a' + i%26))})
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("publishing to a watcher that does not read took %s", d)
	}
	first := sub.Take(<-sub.C())
	if len(first) != 2 || first[0].Kind != KindDropped || first[0].Dropped != 5 || first[1].Seq != 1 {
		t.Fatalf("first events = %+v", first)
	}
	if next := sub.Take(<-sub.C()); len(next) != 1 || next[0].Seq != 2 {
		t.Fatalf("second = %+v", next)
	}
}

func TestWatchersAreBounded(t *testing.T) {
	var h Hub
	var cancels []func()
	for range MaxWatchers {
		_, c, err := h.Subscribe()
		if err != nil {
			t.Fatal(err)
		}
		cancels = append(cancels, c)
	}
	if _, _, err := h.Subscribe(); err != ErrTooMany {
		t.Fatalf("watcher past the bound: %v", err)
	}
	cancels[0]()
	if _, _, err := h.Subscribe(); err != nil {
		t.Fatalf("after one left: %v", err)
	}
}
