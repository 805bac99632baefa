// Package objects is the content-addressed store of pre-images: the bytes
// of every version a change destroyed, under .orchestration/objects/
// sha256/ab/cdef…, so any recorded change can be shown and undone. The
// newest version of a file is the file itself; older versions are kept
// here when a change destroys them, once per distinct content.
package objects

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/ledger"
)

// Dir is the store's directory, relative to the source.
const Dir = ".orchestration/objects"

// DefaultKeepMaxBytes is the size above which only hashes are kept.
const DefaultKeepMaxBytes = 64 << 20

// Store is the object store of one source directory.
type Store struct {
	root string
	// made remembers fan-out directories already created.
	made sync.Map
	seq  atomic.Uint64
	// bufs holds read buffers for hashing, so filing many small objects
	// does not allocate (and clear) a buffer per object.
	bufs sync.Pool
	// bound, set by the daemon before it keeps anything, limits what the
	// store may hold (nil: no bound, only the filesystem's space).
	bound *bound
}

// contentHash is ledger.ContentHash through a pooled buffer.
func (s *Store) contentHash(r io.Reader) (hash string, lines int, err error) {
	buf, _ := s.bufs.Get().(*[]byte)
	if buf == nil {
		b := make([]byte, 128<<10)
		buf = &b
	}
	defer s.bufs.Put(buf)
	hash, lines, _, err = ledger.ContentHashBuffer(r, *buf)
	return hash, lines, err
}

// New returns the store of source.
func New(source string) *Store { return &Store{root: filepath.Join(source, Dir)} }

// Path is where the bytes of hash ("sha256:<hex>") live.
func (s *Store) Path(hash string) (string, bool) {
	hex, ok := strings.CutPrefix(hash, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", false
	}
	return filepath.Join(s.root, "sha256", hex[:2], hex[2:]), true
}

// Has reports whether the bytes of hash are stored.
func (s *Store) Has(hash string) bool {
	p, ok := s.Path(hash)
	if !ok {
		return false
	}
	var st syscall.Stat_t
	return syscall.Stat(p, &st) == nil
}

// holds reports whether the bytes of hash are stored with the given size.
// A stored object of another size cannot be those bytes (something wrote
// it after it was kept), and the caller stores them again over it. Same
// size is trusted here, so that keeping stays a stat; Read checks the
// bytes against their name whenever they are used.
func (s *Store) holds(hash string, size int64) bool {
	p, ok := s.Path(hash)
	if !ok {
		return false
	}
	var st syscall.Stat_t
	return syscall.Stat(p, &st) == nil && st.Size == size
}

// MismatchError is a stored object whose bytes do not hash to its name:
// it was written after it was kept, and must not be restored.
type MismatchError struct {
	Hash, Path, Got string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("object store: %s holds bytes that hash to %s, not to its name %s: it was changed after it was kept, and is not used (remove it, or restore the file from another copy)", e.Path, e.Got, e.Hash)
}

// maxReadBytes bounds a version Read returns whole: the largest a diff
// or a restore takes into memory.
const maxReadBytes = 1<<31 - 1

// Read returns the bytes of hash.
func (s *Store) Read(hash string) ([]byte, error) {
	p, ok := s.Path(hash)
	if !ok {
		return nil, fmt.Errorf("%q is not a sha256 hash", hash)
	}
	// A clone can carry the store: read it as every workspace file is
	// read (no symlink from the store's directory down, never blocking,
	// a regular file, bounded).
	rel, err := filepath.Rel(filepath.Dir(s.root), p)
	if err != nil {
		return nil, fmt.Errorf("object store: %w", err)
	}
	b, err := safeio.ReadFile(filepath.Dir(s.root), rel, maxReadBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the bytes of %s are not in the object store", hash)
	}
	if err != nil {
		return nil, err
	}
	// Whoever could write the object since it was kept must not choose
	// what a restore or a diff shows.
	got, _, err := s.contentHash(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("object store: hashing %s: %w", p, err)
	}
	if got != hash {
		return nil, &MismatchError{Hash: hash, Path: p, Got: got}
	}
	return b, nil
}

// Check re-hashes the stored bytes of hash: nil when they match their
// name, a *MismatchError when they do not, fs.ErrNotExist when they are
// not stored.
func (s *Store) Check(hash string) error {
	p, ok := s.Path(hash)
	if !ok {
		return fmt.Errorf("%q is not a sha256 hash", hash)
	}
	rel, err := filepath.Rel(filepath.Dir(s.root), p)
	if err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	got, err := safeio.HashFile(filepath.Dir(s.root), rel)
	if err != nil {
		return fmt.Errorf("object store: hashing %s: %w", p, err)
	}
	if got != hash {
		return &MismatchError{Hash: hash, Path: p, Got: got}
	}
	return nil
}

func (s *Store) prepare(hash string) (string, error) {
	p, ok := s.Path(hash)
	if !ok {
		return "", fmt.Errorf("%q is not a sha256 hash", hash)
	}
	dir := filepath.Dir(p)
	if _, done := s.made.Load(dir); !done {
		if err := os.MkdirAll(dir, privateDirMode); err != nil {
			return "", fmt.Errorf("object store: %w", err)
		}
		s.made.Store(dir, true)
	}
	return p, nil
}

// KeepLink keeps the file name in dirfd as the bytes of hash by hard
// linking it into the store: no copy, so removing a large tree stays
// cheap. The caller must know that nothing else can still write to the
// inode (no other links, no writable handle); otherwise use KeepFd. A
// link takes no new space and the blocks stay the file owner's, so it is
// never refused and not counted against the bound.
func (s *Store) KeepLink(dirfd int, name, hash string) error {
	p, err := s.prepare(hash)
	if err != nil {
		return err
	}
	// One system call: linking to the final name is atomic, and EEXIST
	// means these bytes are already stored. No chmod: the inode is shared
	// with whoever might still see it (the store's 0700 directories keep
	// it from everyone but the daemon's user; see MakePrivate).
	err = unix.Linkat(dirfd, name, unix.AT_FDCWD, p, 0)
	if err != unix.EEXIST {
		return err // EXDEV and friends: the caller copies instead
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if s.holds(hash, st.Size) {
		return nil
	}
	// What is stored under hash is not these bytes: replace it.
	tmp := filepath.Join(filepath.Dir(p), fmt.Sprintf(".link-%d-%d", os.Getpid(), s.seq.Add(1)))
	if err := unix.Linkat(dirfd, name, unix.AT_FDCWD, tmp, 0); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// KeepFd copies the file open (readable) at fd into the store as hash:
// a reflink where the filesystem offers one, else an in-kernel copy.
func (s *Store) KeepFd(fd int, hash string) error { return s.KeepFdFor(fd, hash, UnknownUID) }

// KeepFdFor is KeepFd for a change by uid, which the copy is counted
// against. Bytes already stored cost nothing; a copy the bound or the
// filesystem's space for unprivileged users cannot take is refused with
// an *UnavailableError.
func (s *Store) KeepFdFor(fd int, hash string, uid uint32) (err error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	if s.holds(hash, st.Size) {
		return nil
	}
	p, err := s.prepare(hash)
	if err != nil {
		return err
	}
	if err := s.reserve(st.Size, filepath.Dir(p)); err != nil {
		return err
	}
	kept := false
	defer func() { s.settle(st.Size, kept, uid) }()
	tmp, err := os.CreateTemp(filepath.Dir(p), ".copy-*")
	if err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := copyFd(int(tmp.Fd()), fd); err != nil {
		tmp.Close()
		return fmt.Errorf("object store: copying: %w", err)
	}
	// Check what landed is what the ledger will name.
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return err
	}
	got, _, err := s.contentHash(tmp)
	if err != nil {
		tmp.Close()
		return err
	}
	if got != hash {
		tmp.Close()
		return fmt.Errorf("object store: the file changed while it was copied (%s, not %s)", got, hash)
	}
	if err := commitTemp(tmp, p); err != nil {
		return err
	}
	kept = true
	return nil
}

// KeepBytes stores b as the bytes of hash, for versions the daemon itself
// replaced from memory (its own sections of the agents' files).
func (s *Store) KeepBytes(b []byte, hash string) error {
	if s.holds(hash, int64(len(b))) {
		return nil
	}
	if got, _, err := s.contentHash(bytes.NewReader(b)); err != nil || got != hash {
		return fmt.Errorf("object store: bytes do not hash to %s", hash)
	}
	p, err := s.prepare(hash)
	if err != nil {
		return err
	}
	size := int64(len(b))
	if err := s.reserve(size, filepath.Dir(p)); err != nil {
		return err
	}
	kept := false
	defer func() { s.settle(size, kept, UnknownUID) }()
	tmp, err := os.CreateTemp(filepath.Dir(p), ".copy-*")
	if err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("object store: %w", err)
	}
	if err := commitTemp(tmp, p); err != nil {
		return err
	}
	kept = true
	return nil
}

// commitTemp makes the copy at tmp private and renames it to p, the name
// it is stored under.
func commitTemp(tmp *os.File, p string) error {
	tmp.Chmod(privateFileMode)
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// copyFd copies all of src into dst from offset 0.
func copyFd(dst, src int) error {
	if err := unix.IoctlFileClone(dst, src); err == nil {
		return nil
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(src, &st); err != nil {
		return err
	}
	var off int64
	for off < st.Size {
		in := off
		n, err := unix.CopyFileRange(src, &in, dst, nil, int(min(st.Size-off, 1<<30)), 0)
		if err != nil || n == 0 {
			// Fall back to read/write for the rest.
			return copyRest(dst, src, off)
		}
		off += int64(n)
	}
	return nil
}

func copyRest(dst, src int, off int64) error {
	buf := make([]byte, 1<<20)
	for {
		n, err := syscall.Pread(src, buf, off)
		if n > 0 {
			if _, werr := syscall.Pwrite(dst, buf[:n], off); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// Remove deletes the bytes of hash.
func (s *Store) Remove(hash string) error {
	p, ok := s.Path(hash)
	if !ok {
		return fmt.Errorf("%q is not a sha256 hash", hash)
	}
	return os.Remove(p)
}

// Object is one stored version.
type Object struct {
	Hash    string
	Size    int64
	ModTime time.Time
	// copied: the daemon wrote these bytes (see isCopy).
	copied bool
}

// Walk calls fn for every stored object.
func (s *Store) Walk(fn func(Object) error) error {
	base := filepath.Join(s.root, "sha256")
	return filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == base {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".") || strings.Contains(d.Name(), ".link-") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		o := Object{Hash: "sha256:" + filepath.Base(filepath.Dir(p)) + d.Name(), Size: info.Size(), ModTime: info.ModTime()}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			o.copied = isCopy(st)
		}
		return fn(o)
	})
}

// Version returns the bytes of hash for workspace path rel: from the
// store, or the file itself when it still has that content (the newest
// version of a file is not copied into the store).
func (s *Store) Version(source, rel, hash string) ([]byte, error) {
	if hash == "" {
		return nil, errors.New("no content recorded")
	}
	if hash == ledger.EmptyHash {
		return []byte{}, nil
	}
	if b, err := s.Read(hash); err == nil {
		return b, nil
	}
	if rel != "" {
		if cur, err := safeio.HashFile(source, rel); err == nil && cur == hash {
			return safeio.ReadPrefix(source, rel, 1<<31-1)
		}
	}
	return nil, fmt.Errorf("the bytes of %s are neither in the object store nor the current %s", hash, rel)
}

// GC removes stored objects that needed does not name, if they have been
// in the store since before cut (by ctime, which a hard link into the
// store also sets). It returns how many were removed and their bytes.
func (s *Store) GC(needed func(hash string) bool, cut time.Time, dryRun bool) (int, int64, error) {
	n, freed := 0, int64(0)
	err := s.Walk(func(o Object) error {
		p, _ := s.Path(o.Hash)
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return nil
		}
		if needed(o.Hash) || time.Unix(st.Ctim.Sec, st.Ctim.Nsec).After(cut) {
			return nil
		}
		if !dryRun {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
		n++
		freed += o.Size
		return nil
	})
	return n, freed, err
}

// List calls fn with the hash of every stored object.
func (s *Store) List(fn func(hash string)) {
	_ = s.Walk(func(o Object) error { fn(o.Hash); return nil })
}

// pendingDir holds pre-images linked before their hash is known.
func (s *Store) pendingDir() string { return filepath.Join(s.root, "pending") }

// LinkPending links name in dirfd into the store before its hash is
// known, so the caller need not read it now; Adopt files it under its hash
// later. The caller must know nothing else can write the inode.
func (s *Store) LinkPending(dirfd int, name string) (string, error) {
	dir := s.pendingDir()
	if _, done := s.made.Load(dir); !done {
		if err := os.MkdirAll(dir, privateDirMode); err != nil {
			return "", err
		}
		s.made.Store(dir, true)
	}
	p := filepath.Join(dir, fmt.Sprintf("%d-%d", os.Getpid(), s.seq.Add(1)))
	return p, unix.Linkat(dirfd, name, unix.AT_FDCWD, p, 0)
}

// Adopt hashes a pending object, files it under its hash (replacing an
// object with the same bytes, if there is one) and returns the hash and
// line count. It runs once per removed file, so it keeps to four system
// calls: open, read, close, rename.
func (s *Store) Adopt(pending string) (string, int, error) {
	fd, err := unix.Open(pending, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", 0, fmt.Errorf("object store: %w", err)
	}
	hash, lines, err := s.contentHash(fdReader(fd))
	unix.Close(fd)
	if err != nil {
		return "", 0, fmt.Errorf("object store: hashing %s: %w", pending, err)
	}
	p, err := s.prepare(hash)
	if err != nil {
		return hash, lines, err
	}
	return hash, lines, os.Rename(pending, p)
}

// fdReader reads a descriptor it does not own.
type fdReader int

func (r fdReader) Read(b []byte) (int, error) {
	n, err := unix.Read(int(r), b)
	if err != nil {
		return 0, err
	}
	if n == 0 && len(b) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// AdoptPending files pre-images a crash left pending.
func (s *Store) AdoptPending() {
	entries, _ := os.ReadDir(s.pendingDir())
	for _, e := range entries {
		s.Adopt(filepath.Join(s.pendingDir(), e.Name()))
	}
}
