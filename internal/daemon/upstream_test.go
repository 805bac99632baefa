package daemon

import (
	"context"
	"testing"
	"time"
)

// TestUpstreamContextOutlivesTheRequest: a signal to the caller cancels
// the request's context (FUSE_INTERRUPT); the wait for the upstream must
// not end with it, or the change is refused as "context canceled" while
// the upstream is fine. It is bounded instead.
func TestUpstreamContextOutlivesTheRequest(t *testing.T) {
	req, interrupt := context.WithCancel(context.Background())
	ctx, cancel := upstreamContext(req, time.Minute)
	defer cancel()
	interrupt()
	if err := ctx.Err(); err != nil {
		t.Fatalf("the upstream's context ended with the request's: %v", err)
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Minute {
		t.Fatalf("the upstream's context is not bounded: %v %v", dl, ok)
	}
}
