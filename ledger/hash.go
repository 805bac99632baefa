package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
)

// EmptyHash is the content hash of no bytes.
const EmptyHash = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// ContentHash reads r to its end and returns the ledger's content hash of
// it ("sha256:<hex>"), its line count (0 for binary content, which has a
// NUL byte, and for empty content) and its size.
func ContentHash(r io.Reader) (hash string, lines int, size int64, err error) {
	return ContentHashBuffer(r, make([]byte, 64<<10))
}

// ContentHashBuffer is ContentHash reading through buf, for callers that
// hash many files and reuse their buffers.
func ContentHashBuffer(r io.Reader, buf []byte) (hash string, lines int, size int64, err error) {
	h := sha256.New()
	binary := false
	var last byte
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			h.Write(chunk)
			size += int64(n)
			if !binary {
				binary = bytes.IndexByte(chunk, 0) >= 0
				lines += bytes.Count(chunk, []byte{'\n'})
			}
			last = chunk[n-1]
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return "", 0, size, rerr
		}
	}
	if size > 0 && last != '\n' {
		lines++
	}
	if binary {
		lines = 0
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), lines, size, nil
}

// HashBytes returns the ledger's content hash of b ("sha256:<hex>").
func HashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// ShortHash abbreviates a content hash for people: its first 12 hex digits
// ("-" for none).
func ShortHash(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	switch {
	case h == "":
		return "-"
	case len(h) > 12:
		return h[:12]
	}
	return h
}
