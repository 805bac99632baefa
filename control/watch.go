package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// pendingEvery is how often a watcher is sent the list of what waits, so
// one that dropped events is current again within a second.
const pendingEvery = time.Second

// watchWriteTimeout bounds one write to a watcher: a watcher that stops
// reading is cut off rather than kept forever.
const watchWriteTimeout = 30 * time.Second

// watch streams the mount's events to c as JSON lines until the watcher
// goes away or the server closes. The events come from a bounded,
// lossy buffer (see internal/feed): a slow watcher loses events and is
// told how many, and never slows the mount.
func (s *Server) watch(c *net.UnixConn, enc *json.Encoder) {
	events, cancel, err := s.backend.Watch()
	if err != nil {
		_ = enc.Encode(Response{Error: "watch: " + err.Error()})
		return
	}
	defer cancel()
	_ = c.SetDeadline(time.Time{})
	// The watcher sends nothing more; a read returns when it hangs up.
	gone := make(chan struct{})
	go func() {
		var b [1]byte
		for {
			if _, err := c.Read(b[:]); err != nil {
				close(gone)
				return
			}
		}
	}()
	send := func(ev Event) bool {
		_ = c.SetWriteDeadline(time.Now().Add(watchWriteTimeout))
		return enc.Encode(ev) == nil
	}
	pending := func() bool {
		p, _ := s.backend.Approvals()
		return send(Event{Time: time.Now(), Kind: EventPending, Pending: p})
	}
	if !pending() {
		return
	}
	tick := time.NewTicker(pendingEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-gone:
			return
		case <-tick.C:
			if !pending() {
				return
			}
		case ev := <-events:
			if !send(ev) {
				return
			}
		}
	}
}

// Watch sends a watch request to the socket at path and calls fn with
// each event until ctx ends, fn fails or the daemon goes away.
func Watch(ctx context.Context, path string, req Request, fn func(Event) error) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return fmt.Errorf("connecting to the daemon at %s: %w", path, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	req.Op = "watch"
	b, _ := json.Marshal(req)
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("sending to the daemon: %w", err)
	}
	dec := json.NewDecoder(bufio.NewReader(conn))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return errors.New("the daemon ended the watch (unmounted?)")
			}
			return fmt.Errorf("reading the daemon's events: %w", err)
		}
		var resp Response
		if json.Unmarshal(raw, &resp) == nil && resp.Error != "" {
			return errors.New(resp.Error)
		}
		var ev Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return fmt.Errorf("reading the daemon's events: %w", err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}
