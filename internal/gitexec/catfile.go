package gitexec

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Blobs reads objects through one long-lived `git cat-file --batch`
// process: one process for any number of objects, and no filter or
// textconv ever applies to what it returns. It is safe for concurrent use;
// requests are served one at a time.
type Blobs struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	// hashes caches the sha256 of each blob read, by object id (an
	// object's content never changes); at most maxHashes are kept.
	hashes map[string]string
	// broken is set once the stream failed: the process is gone or out
	// of step, and every later request would fail too.
	broken bool
}

// maxHashes bounds the hashes a long-lived Blobs remembers.
const maxHashes = 1 << 16

// ErrMissing is returned for an object the repository does not have.
var ErrMissing = errors.New("object missing")

// ErrTooLarge is returned for an object larger than a caller reads.
var ErrTooLarge = errors.New("object too large")

// Blobs starts a cat-file process. Close it when done.
func (r *Repo) Blobs(ctx context.Context) (*Blobs, error) {
	cmd := r.Command(ctx, "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting git cat-file: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting git cat-file: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting git cat-file: %w", err)
	}
	return &Blobs{cmd: cmd, stdin: in, stdout: bufio.NewReaderSize(out, 1<<20), hashes: map[string]string{}}, nil
}

// Broken reports whether the process failed: a caller that keeps Blobs
// across uses starts a new one.
func (b *Blobs) Broken() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.broken
}

// Kill stops the process at once, for a caller that gave up waiting for
// it (requests in progress fail); Close still reaps it.
func (b *Blobs) Kill() {
	_ = b.cmd.Process.Kill()
}

// Close ends the process.
func (b *Blobs) Close() error {
	b.stdin.Close()
	return b.cmd.Wait()
}

// open asks for an object and returns its type and size; the caller must
// consume size bytes and the newline after them.
func (b *Blobs) open(oid string) (string, int64, error) {
	if !ValidOID(oid) {
		return "", 0, fmt.Errorf("%q is not an object id", oid)
	}
	if _, err := io.WriteString(b.stdin, oid+"\n"); err != nil {
		b.broken = true
		return "", 0, fmt.Errorf("git cat-file: %w", err)
	}
	hdr, err := b.stdout.ReadString('\n')
	if err != nil {
		b.broken = true
		return "", 0, fmt.Errorf("git cat-file: %w", err)
	}
	f := strings.Fields(hdr)
	if len(f) == 2 && f[1] == "missing" {
		return "", 0, fmt.Errorf("%s: %w", oid, ErrMissing)
	}
	if len(f) != 3 {
		b.broken = true
		return "", 0, fmt.Errorf("git cat-file: unexpected header %q", hdr)
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		b.broken = true
		return "", 0, fmt.Errorf("git cat-file: bad size in %q", hdr)
	}
	return f[1], size, nil
}

// Hash returns "sha256:<hex>" of a blob's bytes, the ledger's content hash,
// streaming the blob (memory stays flat for large files).
func (b *Blobs) Hash(oid string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h, ok := b.hashes[oid]; ok {
		return h, nil
	}
	_, size, err := b.open(oid)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.CopyN(h, b.stdout, size); err != nil {
		b.broken = true
		return "", fmt.Errorf("git cat-file %s: %w", oid, err)
	}
	if _, err := b.stdout.Discard(1); err != nil {
		b.broken = true
		return "", fmt.Errorf("git cat-file %s: %w", oid, err)
	}
	sum := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if len(b.hashes) >= maxHashes {
		clear(b.hashes)
	}
	b.hashes[oid] = sum
	return sum, nil
}

// Read returns an object's bytes if it is a blob of at most max bytes.
func (b *Blobs) Read(oid string, max int64) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	typ, size, err := b.open(oid)
	if err != nil {
		return nil, err
	}
	if typ != "blob" || size > max {
		// Skip it, keeping the stream in step.
		if _, err := b.stdout.Discard(int(size) + 1); err != nil {
			b.broken = true
			return nil, fmt.Errorf("git cat-file %s: %w", oid, err)
		}
		if typ != "blob" {
			return nil, fmt.Errorf("%s is a %s, not a blob", oid, typ)
		}
		return nil, fmt.Errorf("%s is %d bytes, more than the %d read: %w", oid, size, max, ErrTooLarge)
	}
	buf := make([]byte, size+1)
	if _, err := io.ReadFull(b.stdout, buf); err != nil {
		b.broken = true
		return nil, fmt.Errorf("git cat-file %s: %w", oid, err)
	}
	return buf[:size], nil
}

// ValidOID reports whether s is a full hex object id (SHA-1 or SHA-256):
// nothing else is ever sent to cat-file, whose batch input also accepts
// revision expressions.
func ValidOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
