package mcpserver

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answerWait bounds how long the end of the client's input waits for
// the answers still owed to it: a handler stuck on the mount must not
// keep the server running once its client is gone.
const answerWait = 30 * time.Second

// Serve runs s on the transport t until the client's input ends and
// every request read from it is answered, or ctx ends.
//
// The SDK stops writing as soon as its reader sees the end of the input,
// so on a bare transport a client that writes its requests and closes its
// end (printf '...' | intentfs mcp) got no answer at all; the
// connection Serve hands it reports that end only once nothing read is
// owed an answer.
func Serve(ctx context.Context, s *mcp.Server, t mcp.Transport) error {
	err := s.Run(ctx, answeringTransport{t})
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed)) {
		return nil
	}
	return err
}

// answeringTransport connects t through an answeringConn.
type answeringTransport struct{ t mcp.Transport }

func (a answeringTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := a.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &answeringConn{Connection: c, owed: map[jsonrpc.ID]int{}, answered: make(chan struct{}), closed: make(chan struct{})}, nil
}

// answeringConn counts the calls read from its connection that have not
// been answered, and holds back the end of the input until there are
// none.
type answeringConn struct {
	mcp.Connection
	mu   sync.Mutex
	owed map[jsonrpc.ID]int
	// answered is closed, and replaced, whenever an answer is written.
	answered  chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.mu.Lock()
			c.owed[req.ID]++
			c.mu.Unlock()
		}
		return msg, nil
	}
	if !errors.Is(err, io.EOF) {
		return nil, err
	}
	timeout := time.NewTimer(answerWait)
	defer timeout.Stop()
	for {
		c.mu.Lock()
		owed, answered := len(c.owed), c.answered
		c.mu.Unlock()
		if owed == 0 {
			return nil, err
		}
		select {
		case <-answered:
		case <-ctx.Done():
			return nil, err
		case <-c.closed:
			return nil, err
		case <-timeout.C:
			return nil, err
		}
	}
}

func (c *answeringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		if c.owed[resp.ID]--; c.owed[resp.ID] <= 0 {
			delete(c.owed, resp.ID)
		}
		close(c.answered)
		c.answered = make(chan struct{})
		c.mu.Unlock()
	}
	return err
}

// Close also ends a Read waiting for answers, as a Connection's Close
// must.
func (c *answeringConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}
