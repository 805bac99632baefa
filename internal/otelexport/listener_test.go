package otelexport

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
)

// TestListenerCheckRefusesOtherUsersListeners: a loopback receiver is
// used only when root, the daemon's user or the mounting user listens.
func TestListenerCheckRefusesOtherUsersListeners(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, tc := range []struct {
		name    string
		mount   []uint32
		owner   func(net.Conn) (uint32, error)
		wantErr string
	}{
		{name: "the real table: this process's own listener", owner: nil},
		{name: "root", owner: func(net.Conn) (uint32, error) { return 0, nil }},
		{name: "the mounting user", mount: []uint32{1234}, owner: func(net.Conn) (uint32, error) { return 1234, nil }},
		{name: "another user", mount: []uint32{1234}, owner: func(net.Conn) (uint32, error) { return 1000, nil },
			wantErr: "belongs to uid 1000, not root or the mounting user"},
		{name: "owner unknown", owner: func(net.Conn) (uint32, error) { return 0, errors.New("not in the table") },
			wantErr: "cannot be told"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := newListenerCheck(tc.mount)
			if tc.owner != nil {
				if os.Geteuid() == 1000 || os.Geteuid() == 1234 {
					t.Skip("the test's uids collide with this process's")
				}
				check.peerUID = tc.owner
			}
			c, err := check.dial(context.Background(), "tcp", ln.Addr().String())
			if c != nil {
				c.Close()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("dial: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("dial: %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}
