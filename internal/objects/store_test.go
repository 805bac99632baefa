package objects

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestKeepFdAndLink(t *testing.T) {
	src := t.TempDir()
	s := New(src)
	content := []byte(strings.Repeat("pre-image\n", 1000))
	p := filepath.Join(src, "f")
	os.WriteFile(p, content, 0o644)
	fd, _ := syscall.Open(p, syscall.O_RDONLY, 0)
	defer syscall.Close(fd)
	h := sum(content)
	if err := s.KeepFd(fd, h); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Read(h); err != nil || string(got) != string(content) {
		t.Fatalf("read back: %v", err)
	}
	if err := s.KeepFd(fd, sum([]byte("other"))); err == nil {
		t.Fatal("a wrong hash was stored")
	}
	// Hard link: the bytes survive the unlink, and nothing is copied.
	os.WriteFile(filepath.Join(src, "g"), []byte("linked"), 0o644)
	dir, _ := syscall.Open(src, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	defer syscall.Close(dir)
	hg := sum([]byte("linked"))
	if err := s.KeepLink(dir, "g", hg); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(src, "g"))
	if got, _ := s.Read(hg); string(got) != "linked" {
		t.Fatalf("linked object = %q", got)
	}
	var objs []Object
	s.Walk(func(o Object) error { objs = append(objs, o); return nil })
	if len(objs) != 2 {
		t.Fatalf("walk found %v", objs)
	}
	if _, ok := s.Path("sha256:xyz"); ok {
		t.Fatal("bad hash accepted")
	}
	if _, ok := s.Path("sha256:../../../../etc/passwd0000000000000000000000000000000000000000000"); ok {
		t.Fatal("path traversal accepted")
	}
}

func TestGCKeepsWhatIsNeededAndWhatIsFresh(t *testing.T) {
	src := t.TempDir()
	s := New(src)
	keep := func(content string) string {
		p := filepath.Join(t.TempDir(), "f")
		os.WriteFile(p, []byte(content), 0o644)
		fd, _ := syscall.Open(p, syscall.O_RDONLY, 0)
		defer syscall.Close(fd)
		h := sum([]byte(content))
		if err := s.KeepFd(fd, h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	needed, unneeded := keep("needed by a recent record"), keep("nobody needs this")
	tests := []struct {
		name    string
		cut     time.Time
		dry     bool
		removed int
		left    []string
	}{
		{"fresh objects stay", time.Now().Add(-time.Hour), false, 0, []string{needed, unneeded}},
		{"dry run removes nothing", time.Now().Add(time.Hour), true, 1, []string{needed, unneeded}},
		{"old unneeded goes", time.Now().Add(time.Hour), false, 1, []string{needed}},
	}
	for _, tt := range tests {
		n, _, err := s.GC(func(h string) bool { return h == needed }, tt.cut, tt.dry)
		if err != nil || n != tt.removed {
			t.Fatalf("%s: removed %d (%v), want %d", tt.name, n, err, tt.removed)
		}
		for _, h := range tt.left {
			if !s.Has(h) {
				t.Fatalf("%s: %s was removed", tt.name, h)
			}
		}
	}
	if s.Has(unneeded) {
		t.Fatal("unneeded object survived")
	}
}

func TestPendingIsAdoptedUnderItsHash(t *testing.T) {
	src := t.TempDir()
	s := New(src)
	dir, _ := syscall.Open(src, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	defer syscall.Close(dir)
	for i, content := range []string{"one\ntwo\n", "one\ntwo\n", "bin\x00ary"} {
		name := fmt.Sprintf("f%d", i)
		os.WriteFile(filepath.Join(src, name), []byte(content), 0o644)
		p, err := s.LinkPending(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(src, name))
		hash, lines, err := s.Adopt(p)
		if err != nil || hash != sum([]byte(content)) {
			t.Fatalf("adopt %q: %s %v", content, hash, err)
		}
		if want := map[int]int{0: 2, 1: 2, 2: 0}[i]; lines != want {
			t.Errorf("lines %d, want %d", lines, want)
		}
		if got, _ := s.Read(hash); string(got) != content {
			t.Fatalf("stored %q", got)
		}
	}
	if left, _ := os.ReadDir(s.pendingDir()); len(left) != 0 {
		t.Fatalf("pending left: %v", left)
	}
}

func TestDefaultBound(t *testing.T) {
	for _, c := range []struct{ total, want int64 }{
		{64 << 20, 64 << 20 / 100 * 10},
		{200 << 20, 200 << 20 / 100 * 10},
		{1 << 40, DefaultMaxBytes},
		{0, 0},
	} {
		if got := DefaultBound(c.total); got != c.want {
			t.Errorf("DefaultBound(%d) = %d, want %d", c.total, got, c.want)
		}
	}
}

// TestStoreBound: copies stop at the bound with an error that is ENOSPC
// and names intentfs gc; bytes already stored cost nothing; each copy is
// counted against the uid that caused it.
func TestStoreBound(t *testing.T) {
	src := t.TempDir()
	s := New(src)
	if err := s.MakePrivate(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetBound(250); err != nil {
		t.Fatal(err)
	}
	s.bound.every = 0 // count every time, for the assertions below
	keep := func(content string) error {
		p := filepath.Join(src, "f")
		os.WriteFile(p, []byte(content), 0o644)
		fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
		return s.KeepFdFor(fd, sum([]byte(content)), 1000)
	}
	for i, c := range []struct {
		content string
		full    bool
	}{
		{strings.Repeat("a", 100), false},
		{strings.Repeat("b", 100), false},
		{strings.Repeat("a", 100), false}, // stored already: free
		{strings.Repeat("c", 100), true},
	} {
		err := keep(c.content)
		if (err != nil) != c.full {
			t.Fatalf("copy %d: err %v, want full %v", i, err, c.full)
		}
		if c.full && (!errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "intentfs gc")) {
			t.Errorf("copy %d: %v, want ENOSPC naming intentfs gc", i, err)
		}
	}
	u := s.Usage()
	if u.Bytes != 200 || u.CopiedBytes != 200 || u.Objects != 2 || u.MaxBytes != 250 || u.CopiedByUID[1000] != 200 || u.Refused != 1 {
		t.Errorf("usage = %+v, want 200 bytes copied in 2 objects of 250, 200 by uid 1000, 1 refused", u)
	}
	// A pre-image linked from a removed file is not a copy: it takes no
	// room under the bound, and copies still fit.
	big := filepath.Join(src, "linked")
	os.WriteFile(big, []byte(strings.Repeat("l", 1000)), 0o644)
	dir, _ := syscall.Open(src, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	defer syscall.Close(dir)
	if err := s.KeepLink(dir, "linked", sum([]byte(strings.Repeat("l", 1000)))); err != nil {
		t.Fatal(err)
	}
	os.Remove(big)
	if err := keep(strings.Repeat("d", 40)); err != nil {
		t.Errorf("a copy that fits was refused after a link: %v", err)
	}
	if u := s.Usage(); u.Bytes != 1240 || u.CopiedBytes != 240 {
		t.Errorf("usage after a link = %+v, want 1240 bytes, 240 copied", u)
	}
}
