package fence

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/ledger"
)

func TestXattrFallocateCopyFileRange(t *testing.T) {
	testenv.Parallel(t)
	e := testenv.Mount(t, testenv.ScopePolicy, "INT-001", map[string]string{"src/a.txt": "hello\n", "main.go": "package main\n"})
	in := filepath.Join(e.Mnt, "src/a.txt")
	out := filepath.Join(e.Mnt, "main.go")

	if err := unix.Setxattr(out, "user.note", []byte("x"), 0); err != syscall.EACCES {
		t.Errorf("setxattr out of scope: %v, want EACCES", err)
	}
	if err := unix.Setxattr(in, "user.note", []byte("x"), 0); err != nil {
		t.Fatalf("setxattr in scope: %v", err)
	}
	buf := make([]byte, 16)
	if n, err := unix.Getxattr(in, "user.note", buf); err != nil || string(buf[:n]) != "x" {
		t.Fatalf("getxattr: %q %v", buf[:n], err)
	}
	if err := unix.Removexattr(out, "user.note"); err != syscall.EACCES {
		t.Errorf("removexattr out of scope: %v, want EACCES", err)
	}
	if err := unix.Removexattr(in, "user.note"); err != nil {
		t.Fatalf("removexattr in scope: %v", err)
	}
	e.WaitRecord("xattr", testenv.Event(ledger.EventXattr, "src/a.txt"))

	e.MustSh("fallocate -l 8192 src/big.bin")
	r := e.WaitRecord("fallocate create", testenv.Event(ledger.EventCreate, "src/big.bin"))
	if ledger.Str(r.Gov().PostHash) != e.Sha("src/big.bin") {
		t.Fatal("fallocate post hash")
	}

	// copy_file_range into an in-scope file records the new content.
	src, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(filepath.Join(e.Mnt, "src/copy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := unix.CopyFileRange(int(src.Fd()), nil, int(dst.Fd()), nil, 6, 0)
	dst.Close()
	if err != nil || n != 6 {
		t.Fatalf("copy_file_range: %d %v", n, err)
	}
	r = e.WaitRecord("copy create", testenv.Event(ledger.EventCreate, "src/copy.txt"))
	if ledger.Str(r.Gov().PostHash) != e.Sha("src/copy.txt") || e.Sha("src/copy.txt") != e.Sha("src/a.txt") {
		t.Fatal("copy_file_range content or hash")
	}
}
