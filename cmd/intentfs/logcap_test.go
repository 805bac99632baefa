package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCappedLogRotates points stderr at a file, as the background start
// does, and writes past the cap: the file is rotated once and neither
// file exceeds the cap.
func TestCappedLogRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mount.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup3(int(f.Fd()), 2, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	w := newCappedLog(1000)
	line := strings.Repeat("x", 99) + "\n"
	for i := 0; i < 15; i++ {
		w.Write([]byte(line))
	}
	unix.Dup3(saved, 2, 0)
	syscall.Close(saved)
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if st.Size() > 1000+100 {
			t.Errorf("%s is %d bytes, cap 1000", p, st.Size())
		}
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "log continued from") {
		t.Errorf("the new log does not say where it continues from: %q", b[:40])
	}
}
