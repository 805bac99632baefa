package runner

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheckAncestors(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give directories owners")
	}
	agent := User{Name: "agent", Uid: 1000, Gid: 1000}
	tests := []struct {
		name    string
		prepare func(base string) string // returns the source
		ok      bool
	}{
		{"root-owned parents", func(b string) string { return mk(t, b, "a/src", 0, 0o755) }, true},
		{"a parent the agent owns", func(b string) string {
			s := mk(t, b, "home/work/src", 0, 0o755)
			chown(t, filepath.Join(b, "home/work"), 1000)
			return s
		}, false},
		{"a group-writable parent of the agent's group", func(b string) string {
			s := mk(t, b, "g/src", 0, 0o755)
			os.Chmod(filepath.Join(b, "g"), 0o775)
			os.Chown(filepath.Join(b, "g"), 0, 1000)
			return s
		}, false},
		{"a world-writable parent without the sticky bit", func(b string) string {
			s := mk(t, b, "w/src", 0, 0o755)
			os.Chmod(filepath.Join(b, "w"), 0o777)
			return s
		}, false},
		{"a sticky world-writable parent, root's entry in it", func(b string) string {
			s := mk(t, b, "t/x/src", 0, 0o755)
			os.Chmod(filepath.Join(b, "t"), os.ModeSticky|0o777)
			return s
		}, true},
		{"a sticky world-writable parent, the agent's entry in it", func(b string) string {
			s := mk(t, b, "t/x/src", 0, 0o755)
			os.Chmod(filepath.Join(b, "t"), os.ModeSticky|0o777)
			chown(t, filepath.Join(b, "t/x"), 1000)
			os.Chmod(filepath.Join(b, "t/x"), 0o555)
			return s
		}, false},
		{"the source itself is the agent's", func(b string) string {
			s := mk(t, b, "r/src", 0, 0o755)
			chown(t, s, 1000)
			return s
		}, true},
	}
	for _, tt := range tests {
		base := t.TempDir()
		os.Chmod(base, 0o755)
		src := tt.prepare(base)
		if err := CheckAncestors(src, agent); (err == nil) != tt.ok {
			t.Errorf("%s: %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	if err := CheckAncestors("/nonexistent/x", agent); err == nil {
		t.Errorf("a missing source passed")
	}
}

func mk(t *testing.T, base, rel string, uid int, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(base, rel)
	if err := os.MkdirAll(p, mode); err != nil {
		t.Fatal(err)
	}
	for d := p; d != base; d = filepath.Dir(d) {
		os.Chmod(d, mode)
		os.Chown(d, uid, uid)
	}
	return p
}

func chown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Chown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// TestSessionUmask: the agent never gets the daemon's umask 0, which
// would leave world-writable files in the checkout.
func TestSessionUmask(t *testing.T) {
	for starter, want := range map[uint32]uint32{0: 0o022, 0o022: 0o022, 0o077: 0o077, 0o002: 0o002} {
		if got := *SessionUmask(starter); got != want {
			t.Errorf("SessionUmask(%04o) = %04o, want %04o", starter, got, want)
		}
	}
}
