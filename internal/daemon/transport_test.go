package daemon

import "testing"

func TestParseTransport(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{"", DefaultTransport, false},
		{"auto", TransportAuto, false},
		{"uring", TransportURing, false},
		{"dev", TransportDev, false},
		{"io_uring", "", true},
		{"DEV", "", true},
	} {
		got, err := ParseTransport(tc.in)
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("ParseTransport(%q) = %q, %v; want %q (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
	if DefaultTransport != TransportAuto {
		t.Errorf("the default transport is %q; auto picks io_uring only where the kernel offers it", DefaultTransport)
	}
}
