package otelexport

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"

	"github.com/intentfs/intentfs/internal/sockowner"
)

// listenerCheck dials the receiver and, when it is on loopback, makes
// sure the socket that answered belongs to root, the daemon's user or the
// user who mounted before a byte is sent: a receiver on this machine that
// is down leaves its port to anyone, and whoever binds it would get the
// headers (a bearer token) and every record, and could answer that it
// took them. The check is of the connection made, not of a listing made
// before it, so a listener swapped in between is caught too.
type listenerCheck struct {
	allowed []uint32
	// peerUID finds who owns the other end of a loopback connection.
	peerUID func(net.Conn) (uint32, error)
}

func newListenerCheck(mountUIDs []uint32) listenerCheck {
	allowed := append([]uint32{0, uint32(os.Geteuid())}, mountUIDs...)
	return listenerCheck{allowed: allowed, peerUID: sockowner.PeerUID}
}

// squattedError is a loopback receiver held by another user.
type squattedError struct {
	addr string
	uid  uint32
}

func (e *squattedError) Error() string {
	return fmt.Sprintf("the listener on %s belongs to uid %d, not root or the mounting user: nothing is sent to it (another user may have taken the collector's port while it was down; start the collector, as root or the mounting user)", e.addr, e.uid)
}

// dial connects to addr and refuses a loopback listener of another user.
func (l listenerCheck) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if err := l.check(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (l listenerCheck) check(c net.Conn) error {
	remote, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok || !remote.IP.IsLoopback() {
		return nil
	}
	uid, err := l.peerUID(c)
	if err != nil {
		return fmt.Errorf("the owner of the listener on %s cannot be told, so nothing is sent to it: %w", remote, err)
	}
	if !slices.Contains(l.allowed, uid) {
		return &squattedError{addr: remote.String(), uid: uid}
	}
	return nil
}
