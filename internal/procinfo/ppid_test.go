package procinfo

import (
	"os"
	"testing"
)

func TestParsePpid(t *testing.T) {
	for _, c := range []struct {
		stat string
		want uint32
		ok   bool
	}{
		{"1234 (sh) S 99 1234 1234 0 -1", 99, true},
		{"1234 (a) b) c) R 7 1 1", 7, true},
		{"1234 (x y) S", 0, false},
		{"garbage", 0, false},
		{"1 (init) S x", 0, false},
	} {
		got, ok := parsePpid([]byte(c.stat))
		if got != c.want || ok != c.ok {
			t.Errorf("parsePpid(%q) = %d, %v; want %d, %v", c.stat, got, ok, c.want, c.ok)
		}
	}
	if ppid, ok := ParentPid(uint32(os.Getpid())); !ok || ppid != uint32(os.Getppid()) {
		t.Errorf("ParentPid(self) = %d, %v; want %d", ppid, ok, os.Getppid())
	}
}
