package objects

import (
	"bytes"
	"io"
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

// EmptyDigest is the digest of zero bytes. A function, not a variable, so
// no importer can change it.
func EmptyDigest() Digest { return Digest{Hash: ledger.EmptyHash} }

// Version identifies a version of a file without reading it: same device,
// inode, size, mtime and ctime means the same bytes, since any write
// through any path moves ctime.
type Version struct {
	dev, ino, size uint64
	mtime, ctime   int64
}

// VersionOf is the version st describes.
func VersionOf(st *syscall.Stat_t) Version {
	return Version{uint64(st.Dev), st.Ino, uint64(st.Size), st.Mtim.Nano(), st.Ctim.Nano()}
}

// maxHashCacheEntries bounds the cache; when full it is cleared.
const maxHashCacheEntries = 1 << 16

// HashCache remembers digests by Version so an unchanged file is never
// read twice.
type HashCache struct {
	mu     sync.Mutex
	m      map[Version]Digest
	hashed atomic.Uint64 // bytes read for hashing
	hits   atomic.Uint64
	// bufs holds read buffers: one per concurrent hash, not one per file,
	// keeps hashing small files from churning the garbage collector.
	bufs sync.Pool
}

const hashBufferSize = 128 << 10

// NewHashCache returns an empty cache.
func NewHashCache() *HashCache {
	c := &HashCache{m: map[Version]Digest{}}
	c.bufs.New = func() any { return new([hashBufferSize]byte) }
	return c
}

// HashFd returns the digest of the file open at fd (readable), using the
// cache when the file's stat matches.
func (c *HashCache) HashFd(fd int) (Digest, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return Digest{}, err
	}
	if st.Size == 0 {
		return EmptyDigest(), nil
	}
	k := VersionOf(&st)
	c.mu.Lock()
	d, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
		return d, nil
	}
	d, n, err := c.digest(&fdSection{fd: fd, remain: st.Size})
	c.hashed.Add(uint64(n))
	if err != nil {
		return Digest{}, err
	}
	// Only remember the digest if the file did not change while it was
	// read.
	var after syscall.Stat_t
	if syscall.Fstat(fd, &after) == nil && VersionOf(&after) == k {
		c.put(k, d)
	}
	return d, nil
}

// Cached returns the digest of the version st describes, if known.
func (c *HashCache) Cached(st *syscall.Stat_t) (Digest, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[VersionOf(st)]
	return d, ok
}

// Renamed carries the digest the cache knows for the version before
// describes over to after, the same file once a rename has moved its
// ctime. A rename changes no byte; a write since before was taken would
// have moved the mtime (or the size) as well, and then nothing is carried.
func (c *HashCache) Renamed(before, after *syscall.Stat_t) {
	b, a := VersionOf(before), VersionOf(after)
	if b == a || b.dev != a.dev || b.ino != a.ino || b.size != a.size || b.mtime != a.mtime {
		return
	}
	c.mu.Lock()
	d, ok := c.m[b]
	c.mu.Unlock()
	if ok {
		c.put(a, d)
	}
}

func (c *HashCache) put(k Version, d Digest) {
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

// DigestBytes is the digest of data, the bytes of the file open at fd as
// st describes it, read by the caller (who needs them anyway, for a diff).
// It is remembered only if the file did not change meanwhile.
func (c *HashCache) DigestBytes(fd int, st *syscall.Stat_t, data []byte) Digest {
	// Reading from memory cannot fail.
	d, _, _ := c.digest(bytes.NewReader(data))
	c.hashed.Add(uint64(len(data)))
	var after syscall.Stat_t
	if syscall.Fstat(fd, &after) == nil && VersionOf(&after) == VersionOf(st) {
		c.put(VersionOf(st), d)
	}
	return d
}

// digest hashes r through a pooled buffer and counts its lines.
func (c *HashCache) digest(r io.Reader) (Digest, int64, error) {
	buf := c.bufs.Get().(*[hashBufferSize]byte)
	defer c.bufs.Put(buf)
	hash, lines, n, err := ledger.ContentHashBuffer(r, buf[:])
	return Digest{Hash: hash, Lines: lines}, n, err
}

// fdSection reads the first remain bytes of a borrowed descriptor with
// pread: no duplicate descriptor, no *os.File, and the descriptor's file
// position is left alone. Stopping at the size taken from fstat keeps a
// file that grows while it is read from being hashed past that version.
type fdSection struct {
	fd     int
	off    int64
	remain int64
}

func (s *fdSection) Read(b []byte) (int, error) {
	if s.remain <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > s.remain {
		b = b[:s.remain]
	}
	n, err := syscall.Pread(s.fd, b, s.off)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF // shrank while read
	}
	s.off += int64(n)
	s.remain -= int64(n)
	return n, nil
}
