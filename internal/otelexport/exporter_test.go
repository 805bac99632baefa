package otelexport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"

	"github.com/intentfs/intentfs/ledger"
)

// fakeReceiver is an exporter with no network: it blocks every export
// until released, then accepts or fails it.
type fakeReceiver struct {
	mu       sync.Mutex
	release  chan struct{}
	fail     bool
	received []string // metadata.uid of each record accepted
}

func (f *fakeReceiver) Export(ctx context.Context, recs []sdklog.Record) error {
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.fail {
		return errors.New("connection refused")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			if kv.Key == "metadata.uid" {
				f.received = append(f.received, kv.Value.AsString())
			}
			return true
		})
	}
	return nil
}

func (f *fakeReceiver) Shutdown(context.Context) error   { return nil }
func (f *fakeReceiver) ForceFlush(context.Context) error { return nil }

func (f *fakeReceiver) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.received)
}

func records(n int) []*ledger.Record {
	out := make([]*ledger.Record, n)
	for i := range out {
		out[i] = ledger.NewRecord(ledger.Change{Event: ledger.EventWrite, Path: fmt.Sprintf("f%d", i), Intent: "INT-001"}, "t")
	}
	return out
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

var testConfig = Config{Endpoint: "http://127.0.0.1:4318", Protocol: ProtocolHTTP}

// TestOfferNeverWaitsAndCountsWhatItDrops: with the receiver stuck, the
// record path goes on at full speed; what the queues cannot hold is
// dropped and counted, and every record offered is accounted for.
func TestOfferNeverWaitsAndCountsWhatItDrops(t *testing.T) {
	recv := &fakeReceiver{release: make(chan struct{})}
	const queue = 100
	e := start(context.Background(), testConfig, recv, nil, queue)
	const carried = queue + sdkQueueSize + 1
	const offered = carried + 1000
	recs := records(offered)
	// Fill the SDK's queue one record at a time, and one more, which the
	// worker holds until the SDK has room.
	for _, r := range recs[:sdkQueueSize+1] {
		e.Offer(r)
		waitUntil(t, "the worker to take the record", func() bool { return len(e.queue) == 0 })
	}
	began := time.Now()
	for _, r := range recs[sdkQueueSize+1:] {
		e.Offer(r)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("offering %d records to a stuck receiver took %v: the record path waited", offered-sdkQueueSize-1, took)
	}
	if s := e.Stats(); s.Queued != carried || s.Dropped != offered-carried || s.Exported != 0 || s.Failed != 0 {
		t.Fatalf("stats with a stuck receiver: %+v, want %d queued and %d dropped", s, carried, offered-carried)
	}
	close(recv.release)
	waitUntil(t, "the queued records to be exported", func() bool { return e.Stats().Exported == carried })
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := e.Stats()
	if s.Exported+s.Dropped+s.Failed != offered || s.Queued != 0 || recv.count() != int(s.Exported) {
		t.Errorf("after shutdown: %+v, receiver got %d; want all %d offered accounted for", s, recv.count(), offered)
	}
	// The ones exported are the first ones, in order.
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for i, id := range recv.received {
		if id != recs[i].ID {
			t.Fatalf("record %d exported is %s, want %s (the ledger's order)", i, id, recs[i].ID)
		}
	}
}

// TestFailedExportsAreCounted: a receiver that refuses every batch leaves
// each record counted as failed, with the error shown.
func TestFailedExportsAreCounted(t *testing.T) {
	recv := &fakeReceiver{fail: true}
	e := start(context.Background(), testConfig, recv, nil, QueueSize)
	for _, r := range records(10) {
		e.Offer(r)
	}
	waitUntil(t, "the failures to be counted", func() bool { return e.Stats().Failed == 10 })
	if s := e.Stats(); s.LastError != "connection refused" || s.Exported != 0 || s.Dropped != 0 || s.Queued != 0 {
		t.Errorf("stats: %+v", s)
	}
	recv.fail = false
	e.Offer(records(1)[0])
	waitUntil(t, "an export after the receiver is back", func() bool { return e.Stats().Exported == 1 })
	if s := e.Stats(); s.LastError != "" {
		t.Errorf("last error still shown once exports succeed: %+v", s)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownFlushesWithinItsDeadline: at unmount the queue is sent; a
// receiver that never answers holds the unmount no longer than the
// deadline, and what it did not take is counted as dropped.
func TestShutdownFlushesWithinItsDeadline(t *testing.T) {
	t.Run("receiver up", func(t *testing.T) {
		recv := &fakeReceiver{}
		e := start(context.Background(), testConfig, recv, nil, QueueSize)
		for _, r := range records(700) {
			e.Offer(r)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s := e.Stats(); s.Exported != 700 || recv.count() != 700 {
			t.Errorf("after shutdown: %+v, receiver got %d, want all 700", s, recv.count())
		}
		e.Offer(records(1)[0])
		if s := e.Stats(); s.Dropped != 1 {
			t.Errorf("a record offered after shutdown is not counted as dropped: %+v", s)
		}
	})
	t.Run("receiver stuck", func(t *testing.T) {
		recv := &fakeReceiver{release: make(chan struct{})}
		defer close(recv.release)
		e := start(context.Background(), testConfig, recv, nil, QueueSize)
		for _, r := range records(50) {
			e.Offer(r)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		began := time.Now()
		_ = e.Shutdown(ctx)
		if took := time.Since(began); took > 3*time.Second {
			t.Errorf("shutdown with a stuck receiver took %v", took)
		}
		if s := e.Stats(); s.Dropped+s.Failed != 50 || s.Exported != 0 || s.Queued != 0 {
			t.Errorf("after shutdown: %+v, want the 50 records dropped or failed", s)
		}
	})
}
