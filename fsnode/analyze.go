package fsnode

import (
	"syscall"

	"github.com/intentfs/intentfs/internal/attribution"
	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/ledger"
)

// contentChange describes a file's new content against a previous version.
type contentChange struct {
	digest objects.Digest
	ranges []ledger.Range
	class  ledger.MutationClass
	// attribute, when set, computes ranges and class later (in the ledger
	// writer) from the bytes captured now.
	attribute func() ([]ledger.Range, ledger.MutationClass)
}

// maxDeferredBytes bounds the post-images held in the ledger queue for a
// deferred diff; a larger change is attributed on the spot.
const maxDeferredBytes = 1 << 20

// analyze hashes the file open at fd and, when it is small enough and its
// previous version (preHash, "" for a new file) can be read, works out the
// changed line hunks and the kind of change.
func (r *Root) analyze(rel, preHash string, fd int) (contentChange, error) {
	declared := r.gov.DeclaredClass()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return contentChange{}, err
	}
	if st.Size > attribution.MaxDiffBytes {
		d, err := r.hashes.HashFd(fd)
		return contentChange{digest: d, class: attribution.ClassByName(rel, declared)}, err
	}
	// pread on the borrowed descriptor: an *os.File around it would close
	// it when collected.
	post := make([]byte, st.Size)
	for off := 0; off < len(post); {
		n, err := syscall.Pread(fd, post[off:], int64(off))
		if err != nil {
			return contentChange{}, err
		}
		if n == 0 {
			post = post[:off] // shrank while read
			break
		}
		off += n
	}
	// The bytes are needed for the diff; their hash may already be known
	// (a rename over a file moves a version released a moment ago).
	d, known := r.hashes.Cached(&st)
	if !known {
		d = r.hashes.DigestBytes(fd, &st, post)
	}
	// The classifier remembers what it learns of post under its hash:
	// only if the bytes read are that version, not written meanwhile.
	postHash := ""
	if sameVersion(fd, &st) {
		postHash = d.Hash
	}
	c := contentChange{digest: d}
	if d.Lines == 0 {
		c.class = attribution.ClassByName(rel, declared)
		return c, nil // binary or empty: no line ranges
	}
	if preHash == "" {
		// A new file: its whole content is the change, and the hash of its
		// lines is the file's hash.
		c.ranges = []ledger.Range{{StartLine: 1, EndLine: d.Lines, ContentHash: d.Hash}}
		c.class = attribution.ClassByName(rel, declared)
		return c, nil
	}
	diff := func() ([]ledger.Range, ledger.MutationClass) {
		var pre []byte
		if preHash != ledger.EmptyHash {
			b, err := r.objects.Read(preHash)
			if err != nil {
				return attribution.WholeFile(post), attribution.ClassByName(rel, declared)
			}
			pre = b
		}
		ranges := attribution.Ranges(pre, post)
		if ranges == nil {
			ranges = []ledger.Range{}
		}
		return ranges, r.classifier.Classify(rel, pre, preHash, post, postHash, declared)
	}
	if len(post) <= maxDeferredBytes {
		c.attribute = diff
	} else {
		c.ranges, c.class = diff()
	}
	return c, nil
}
