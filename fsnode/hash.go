package fsnode

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/intentfs/intentfs/ledger"
)

// Digest is the content identity of a file: its sha256 and, for text, its
// line count.
type Digest struct {
	Hash  string // "sha256:<hex>"
	Lines int    // 0 for binary or empty content
}

// EmptyDigest is the digest of zero bytes.
var EmptyDigest = Digest{Hash: ledger.EmptyHash}

// statKey identifies a version of a file without reading it: same device,
// inode, size, mtime and ctime means the same bytes, since any write
// through any path moves ctime.
type statKey struct {
	dev, ino, size uint64
	mtime, ctime   int64
}

func keyOf(st *syscall.Stat_t) statKey {
	return statKey{uint64(st.Dev), st.Ino, uint64(st.Size), st.Mtim.Nano(), st.Ctim.Nano()}
}

// maxHashCacheEntries bounds the cache; when full it is cleared.
const maxHashCacheEntries = 1 << 16

// HashCache remembers digests by statKey so an unchanged file is never
// read twice.
type HashCache struct {
	mu     sync.Mutex
	m      map[statKey]Digest
	hashed atomic.Uint64 // bytes read for hashing
	hits   atomic.Uint64
}

// NewHashCache returns an empty cache.
func NewHashCache() *HashCache { return &HashCache{m: map[statKey]Digest{}} }

// HashFd returns the digest of the file open at fd (readable), using the
// cache when the file's stat matches.
func (c *HashCache) HashFd(fd int) (Digest, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return Digest{}, err
	}
	if st.Size == 0 {
		return EmptyDigest, nil
	}
	k := keyOf(&st)
	c.mu.Lock()
	d, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
		return d, nil
	}
	// Read through a duplicate so closing the reader leaves fd open.
	dup, err := syscall.Dup(fd)
	if err != nil {
		return Digest{}, err
	}
	f := os.NewFile(uintptr(dup), "")
	d, n, err := digestReader(io.NewSectionReader(f, 0, st.Size))
	f.Close()
	c.hashed.Add(uint64(n))
	if err != nil {
		return Digest{}, err
	}
	// Only remember the digest if the file did not change while it was
	// read.
	var after syscall.Stat_t
	if syscall.Fstat(fd, &after) == nil && keyOf(&after) == k {
		c.put(k, d)
	}
	return d, nil
}

// cached returns the digest of the version st describes, if known.
func (c *HashCache) cached(st *syscall.Stat_t) (Digest, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[keyOf(st)]
	return d, ok
}

func (c *HashCache) put(k statKey, d Digest) {
	c.mu.Lock()
	if len(c.m) >= maxHashCacheEntries {
		clear(c.m)
	}
	c.m[k] = d
	c.mu.Unlock()
}

// BytesHashed is how many bytes were read to compute digests.
func (c *HashCache) BytesHashed() uint64 { return c.hashed.Load() }

// Hits is how many digests came from the cache.
func (c *HashCache) Hits() uint64 { return c.hits.Load() }

// digestReader hashes r and counts its lines.
func digestReader(r io.Reader) (Digest, int64, error) {
	hash, lines, n, err := ledger.ContentHash(r)
	return Digest{Hash: hash, Lines: lines}, n, err
}
