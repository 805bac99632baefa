package objects

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/ledger"
)

func TestHashFdDigestAndLines(t *testing.T) {
	tests := []struct {
		name    string
		content string
		lines   int
	}{
		{"empty", "", 0},
		{"one line with newline", "a\n", 1},
		{"no final newline", "a\nb", 2},
		{"three lines", "a\nb\nc\n", 3},
		{"binary", "a\x00b\n", 0},
		{"large", strings.Repeat("line\n", 200000), 200000},
	}
	c := NewHashCache()
	for _, tt := range tests {
		p := filepath.Join(t.TempDir(), "f")
		os.WriteFile(p, []byte(tt.content), 0o644)
		fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.HashFd(fd)
		syscall.Close(fd)
		sum := sha256.Sum256([]byte(tt.content))
		if err != nil || d.Hash != "sha256:"+hex.EncodeToString(sum[:]) || d.Lines != tt.lines {
			t.Errorf("%s: digest %+v err %v, want lines %d", tt.name, d, err, tt.lines)
		}
	}
}

func TestHashCacheHitsOnlyForTheSameVersion(t *testing.T) {
	c := NewHashCache()
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("one\n"), 0o644)
	hash := func() Digest {
		fd, _ := syscall.Open(p, syscall.O_RDONLY, 0)
		defer syscall.Close(fd)
		d, err := c.HashFd(fd)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := hash()
	read := c.BytesHashed()
	if again := hash(); again != first || c.BytesHashed() != read || c.Hits() != 1 {
		t.Fatalf("unchanged file re-read: hits %d bytes %d->%d", c.Hits(), read, c.BytesHashed())
	}
	// Same size, same mtime set back: ctime still moves, so no stale hit.
	st, _ := os.Stat(p)
	os.WriteFile(p, []byte("two\n"), 0o644)
	os.Chtimes(p, time.Now(), st.ModTime())
	if changed := hash(); changed == first {
		t.Fatal("cache returned the old digest for new content")
	}
}

// TestDigestBytesIsRememberedForItsVersion: the digest of bytes a caller
// read is the file's digest, and is found again for the same version.
func TestDigestBytesIsRememberedForItsVersion(t *testing.T) {
	c := NewHashCache()
	p := filepath.Join(t.TempDir(), "f")
	const content = "a\nb\n"
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Cached(&st); ok {
		t.Fatal("a fresh cache knows the file")
	}
	d := c.DigestBytes(fd, &st, []byte(content))
	sum := sha256.Sum256([]byte(content))
	if d.Hash != "sha256:"+hex.EncodeToString(sum[:]) || d.Lines != 2 || c.BytesHashed() != uint64(len(content)) {
		t.Fatalf("digest %+v, %d bytes hashed", d, c.BytesHashed())
	}
	if cached, ok := c.Cached(&st); !ok || cached != d {
		t.Fatalf("not remembered: %+v %v", cached, ok)
	}
	if EmptyDigest().Hash != ledger.EmptyHash || EmptyDigest().Lines != 0 {
		t.Fatalf("EmptyDigest() = %+v", EmptyDigest())
	}
}
