package main

import "testing"

func TestProfilePathSeparatesTheBackgroundDaemon(t *testing.T) {
	for _, tc := range []struct {
		path   string
		daemon bool
		want   string
	}{
		{"/tmp/cpu.prof", false, "/tmp/cpu.prof"},
		{"/tmp/cpu.prof", true, "/tmp/cpu.prof.daemon"},
	} {
		if got := profilePath(tc.path, tc.daemon); got != tc.want {
			t.Errorf("profilePath(%q, %v) = %q, want %q", tc.path, tc.daemon, got, tc.want)
		}
	}
}
