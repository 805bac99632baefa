package main

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// TestSigningKeyReachableBySession: a session may start only when its
// user cannot read the mount's signing key.
func TestSigningKeyReachableBySession(t *testing.T) {
	hidden := []string{"/run/intentfs", "/run/user/1000/intentfs"}
	root0600 := syscall.Stat_t{Uid: 0, Mode: syscall.S_IFREG | 0o600}
	human0600 := syscall.Stat_t{Uid: 1000, Mode: syscall.S_IFREG | 0o600}
	cases := []struct {
		name string
		file string
		st   syscall.Stat_t
		err  error
		uid  uint32
		want string // "" allowed
	}{
		{"root's 0600 key, agent uid 1001", "/etc/intentfs/signing_key", root0600, nil, 1001, ""},
		{"root's 0600 key, agent as the human", "/etc/intentfs/signing_key", root0600, nil, 1000, ""},
		{"the human's key, agent as the human", "/home/h/.ssh/intentfs", human0600, nil, 1000, "owned by the session's user"},
		{"the human's key, another agent user", "/home/h/.ssh/intentfs", human0600, nil, 1001, ""},
		{"the human's key in a hidden runtime dir", "/run/user/1000/intentfs/signing_key", human0600, nil, 1000, ""},
		{"a name that only starts like a hidden dir", "/run/intentfs-keys/k", human0600, nil, 1000, "owned by the session's user"},
		{"a session as root", "/etc/intentfs/signing_key", root0600, nil, 0, "as root"},
		{"a key made readable since", "/etc/intentfs/signing_key", syscall.Stat_t{Uid: 0, Mode: syscall.S_IFREG | 0o644}, nil, 1001, "chmod 600"},
		{"a key gone since", "/etc/intentfs/signing_key", syscall.Stat_t{}, errors.New("no such file"), 1001, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := signingKeyReachable(tc.file, tc.st, tc.err, tc.uid, hidden)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
