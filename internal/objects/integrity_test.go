package objects

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// corrupt overwrites the stored object of hash with b, as a writer that
// kept a descriptor on it would.
func corrupt(t *testing.T, s *Store, hash string, b []byte) {
	t.Helper()
	p, _ := s.Path(hash)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReadAndCheckRefuseAnObjectThatDoesNotMatchItsName: bytes written
// into the store after they were kept are never handed out as the
// version their name says.
func TestReadAndCheckRefuseAnObjectThatDoesNotMatchItsName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stored  []byte
		corrupt []byte // nil: left alone
		wantErr bool
	}{
		{name: "intact", stored: []byte("package lib\n")},
		{name: "same size", stored: []byte("package lib\n"), corrupt: []byte("CORRUPTED!!\n"), wantErr: true},
		{name: "other size", stored: []byte("package lib\n"), corrupt: []byte("CORRUPTED-PREIMAGE\n"), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t.TempDir())
			h := sum(tc.stored)
			if err := s.KeepBytes(tc.stored, h); err != nil {
				t.Fatal(err)
			}
			if tc.corrupt != nil {
				corrupt(t, s, h, tc.corrupt)
			}
			b, rerr := s.Read(h)
			cerr := s.Check(h)
			var mm *MismatchError
			if tc.wantErr {
				if !errors.As(rerr, &mm) || mm.Hash != h || !errors.As(cerr, &mm) {
					t.Fatalf("Read = %q, %v; Check = %v; want a MismatchError naming %s", b, rerr, cerr, h)
				}
				return
			}
			if rerr != nil || cerr != nil || string(b) != string(tc.stored) {
				t.Fatalf("Read = %q, %v; Check = %v", b, rerr, cerr)
			}
		})
	}
	if err := New(t.TempDir()).Check(sum([]byte("x"))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Check of a missing object = %v, want ErrNotExist", err)
	}
}

// TestKeepReplacesAnObjectOfAnotherSize: a corrupted object of another
// size does not stand in for the bytes of its name when they are kept
// again, whichever way they are kept.
func TestKeepReplacesAnObjectOfAnotherSize(t *testing.T) {
	content := []byte("package lib // the real pre-image\n")
	h := sum(content)
	for _, tc := range []struct {
		name string
		keep func(t *testing.T, s *Store, dir string) error
	}{
		{name: "KeepBytes", keep: func(t *testing.T, s *Store, dir string) error { return s.KeepBytes(content, h) }},
		{name: "KeepFd", keep: func(t *testing.T, s *Store, dir string) error {
			fd, err := syscall.Open(filepath.Join(dir, "f"), syscall.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fd)
			return s.KeepFd(fd, h)
		}},
		{name: "KeepLink", keep: func(t *testing.T, s *Store, dir string) error {
			dirfd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(dirfd)
			return s.KeepLink(dirfd, "f", h)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := New(dir)
			if err := os.WriteFile(filepath.Join(dir, "f"), content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := s.KeepBytes(content, h); err != nil {
				t.Fatal(err)
			}
			corrupt(t, s, h, []byte("CORRUPTED-PREIMAGE\n"))
			if err := tc.keep(t, s, dir); err != nil {
				t.Fatal(err)
			}
			if err := s.Check(h); err != nil {
				t.Fatalf("after keeping the bytes again: %v", err)
			}
		})
	}
}
