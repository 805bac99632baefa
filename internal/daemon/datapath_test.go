package daemon

import (
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestCachedDataPathMountOptions: without OPEN, an O_TRUNC open must come
// as a SETATTR (no ATOMIC_O_TRUNC) to be decided, locks, which need a
// handle to reach the source, stay in the kernel, and no inode is in
// passthrough mode (a later open without OPEN of it fails).
func TestCachedDataPathMountOptions(t *testing.T) {
	for _, tc := range []struct {
		path        string
		atomicTrunc bool
		locks       bool
	}{
		{DataPathPassthrough, true, true},
		{DataPathCached, false, false},
	} {
		o := mountOptions(Config{Source: "/src"}, true, tc.path)
		if got := o.ExtraCapabilities&fuse.CAP_ATOMIC_O_TRUNC != 0; got != tc.atomicTrunc {
			t.Errorf("%s: ATOMIC_O_TRUNC %v, want %v", tc.path, got, tc.atomicTrunc)
		}
		if o.EnableLocks != tc.locks {
			t.Errorf("%s: locks %v, want %v", tc.path, o.EnableLocks, tc.locks)
		}
		if got := o.DisabledCapabilities&fuse.CAP_PASSTHROUGH == 0; got != tc.locks {
			t.Errorf("%s: kernel passthrough %v, want %v", tc.path, got, tc.locks)
		}
	}
}

func TestParseDataPath(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{"", DataPathPassthrough, false},
		{"passthrough", DataPathPassthrough, false},
		{"cached", DataPathCached, false},
		{"fast", "", true},
	} {
		got, err := ParseDataPath(tc.in)
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("ParseDataPath(%q) = %q, %v; want %q (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}
