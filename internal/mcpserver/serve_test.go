package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer is what the server writes, read while it may still write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A client that writes its requests and closes its end at once (a
// one-shot `printf ... | intentfs mcp`) still gets every answer: the end
// of the input ends the server only after what it read is answered.
func TestServeAnswersRequestsSentBeforeTheInputEnds(t *testing.T) {
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	tests := []struct {
		name    string
		input   []string
		wantIDs []float64
	}{
		{"initialize alone", []string{initialize}, []float64{1}},
		{"initialize and a tool call", []string{initialize, initialized,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_intents","arguments":{}}}`}, []float64{1, 2}},
		{"initialize and a resource read", []string{initialize, initialized,
			`{"jsonrpc":"2.0","id":"g","method":"resources/read","params":{"uri":"` + GuideURI + `"}}`}, []float64{1, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &lockedBuffer{}
			in := io.NopCloser(strings.NewReader(strings.Join(tt.input, "\n") + "\n"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := Serve(ctx, New(&fakeMount{active: "INT-001"}, "test"), &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{out}})
			if err != nil {
				t.Fatalf("Serve: %v", err)
			}
			var got []float64
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var msg struct {
					ID     any             `json:"id"`
					Result json.RawMessage `json:"result"`
					Error  json.RawMessage `json:"error"`
				}
				if line == "" {
					continue
				}
				if err := json.Unmarshal([]byte(line), &msg); err != nil {
					t.Fatalf("the server wrote %q: %v", line, err)
				}
				if msg.Result == nil {
					t.Errorf("an answer without a result: %s", line)
				}
				switch id := msg.ID.(type) {
				case float64:
					got = append(got, id)
				case string:
					got = append(got, -1)
				}
			}
			if !slices.Equal(got, tt.wantIDs) {
				t.Errorf("answered ids %v, want %v; the server wrote:\n%s", got, tt.wantIDs, out.String())
			}
		})
	}
}

// An answer the server never gives does not hold it forever once the
// input has ended.
func TestServeEndsWhenTheContextEndsWithAnAnswerOwed(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, New(&fakeMount{active: "INT-001"}, "test"), &mcp.IOTransport{Reader: r, Writer: nopWriteCloser{io.Discard}})
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
