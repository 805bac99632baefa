package safeio

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Reading a file allocates its buffer once, at its size: the object store
// reads a pre-image back this way for every change it describes by line.
func TestReadFileAtAllocatesTheFileOnce(t *testing.T) {
	dir := t.TempDir()
	want := bytes.Repeat([]byte("package x // a line of Go\n"), 1000)
	if err := os.WriteFile(filepath.Join(dir, "f.go"), want, 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := syscall.Open(dir, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(root)
	var got []byte
	allocs := testing.AllocsPerRun(20, func() {
		if got, err = ReadFileAt(root, "f.go", 1<<20); err != nil {
			t.Fatal(err)
		}
	})
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d", len(got), len(want))
	}
	if allocs > 4 {
		t.Errorf("%v allocations to read a %d-byte file", allocs, len(want))
	}
}
