package attribution

import (
	"go/token"
	"sort"
	"sync"

	"github.com/intentfs/intentfs/ledger"
)

// checkpointSpacing is the least distance, in bytes, between two token
// starts a Classifier remembers of one version: a change then scans at
// most about this much before it.
const checkpointSpacing = 2048

// maxRememberedVersions and maxRememberedStarts bound what a Classifier
// remembers (at most 4 bytes a start); when either is reached it forgets
// everything. A session's working set of files is what it must hold: an
// editor saving each of a few hundred files in turn finds none of them
// again if it is smaller.
const (
	maxRememberedVersions = 8192
	maxRememberedStarts   = 1 << 18
)

// Classifier is Classify with a memory of the Go sources it scanned. For
// each version, by its content hash, it keeps token starts that a scan
// from the top of the file reaches without an error. The next change of
// that version is then compared from the last such start before the
// change instead of from the top: an editor saving a file over and over,
// or an agent making one edit after another, pays for the bytes around
// each change, not for the whole file each time. The answers are
// Classify's.
type Classifier struct {
	// spacing is checkpointSpacing, smaller in tests so that a change
	// falls near a remembered start more often.
	spacing int
	mu      sync.Mutex
	known   map[string][]int32
	starts  int // in known
}

// NewClassifier returns a Classifier that remembers nothing yet.
func NewClassifier() *Classifier {
	return &Classifier{spacing: checkpointSpacing, known: map[string][]int32{}}
}

// Classify is Classify of the change of p from pre to post, whose content
// hashes are preHash and postHash ("" when not known).
func (c *Classifier) Classify(p string, pre []byte, preHash string, post []byte, postHash string, declared ledger.MutationClass) ledger.MutationClass {
	if cl := ClassByName(p, declared); cl != ledger.ClassEvolution || declared != "" {
		return cl
	}
	if !isGoChange(p, pre, post) {
		return classifyText(p, pre, post)
	}
	if c.sameGoTokens(pre, preHash, post, postHash) {
		return ledger.ClassDocumentation
	}
	return ledger.ClassEvolution
}

// sameGoTokens is sameGoTokens, starting from what is remembered of a
// and remembering what it learns of b.
func (c *Classifier) sameGoTokens(a []byte, aHash string, b []byte, bHash string) bool {
	limit := commonPrefix(a, b)
	known := c.lookup(aHash)
	// The remembered starts of a that lie well inside the shared prefix
	// are starts of b too.
	i := sort.Search(len(known), func(i int) bool { return int(known[i])+scanLookahead > limit })
	from := 0
	if i > 0 {
		from = int(known[i-1])
	}
	noted := &checkpoints{spacing: c.spacing, starts: append([]int32(nil), known[:i]...)}
	restart := goRestartPointFrom(a, from, limit, noted.add)
	if restart < 0 {
		return false // a does not scan
	}
	same := sameGoTokensFromNoting(a[restart:], b[restart:], restart, noted.add)
	c.remember(bHash, noted.starts)
	return same
}

func (c *Classifier) lookup(hash string) []int32 {
	if hash == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known[hash]
}

func (c *Classifier) remember(hash string, starts []int32) {
	if hash == "" || len(starts) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.known) >= maxRememberedVersions || c.starts+len(starts) > maxRememberedStarts {
		clear(c.known)
		c.starts = 0
	}
	c.starts += len(starts) - len(c.known[hash])
	c.known[hash] = starts
}

// checkpoints collects ascending token starts, at least spacing apart.
type checkpoints struct {
	spacing int
	starts  []int32
}

func (n *checkpoints) add(off int) {
	if k := len(n.starts); k == 0 || off-int(n.starts[k-1]) >= n.spacing {
		n.starts = append(n.starts, int32(off))
	}
}

// goRestartPointFrom is goRestartPoint, scanning src from the token start
// from, which a scan from the top reaches without an error. note is told
// each token start it passes (at least scanLookahead before limit); they
// count only when the answer is not -1.
func goRestartPointFrom(src []byte, from, limit int, note func(int)) int {
	var g goTokenScanner
	g.init(src[from:])
	restart := from
	for {
		pos, tok, _ := g.s.Scan()
		off := from + g.file.Offset(pos)
		if tok == token.EOF || off+scanLookahead > limit {
			break
		}
		if tok != token.SEMICOLON { // an automatic semicolon starts no token
			restart = off
			if !g.bad {
				note(off)
			}
		}
	}
	if g.bad {
		return -1
	}
	return restart
}

// sameGoTokensFromNoting is sameGoTokensFrom of a and b, which begin at
// offset base of their files, telling note each start of a token of b
// that b scans to without an error.
func sameGoTokensFromNoting(a, b []byte, base int, note func(int)) bool {
	var sa, sb goTokenScanner
	sa.init(a)
	sb.init(b)
	for {
		ta, la, _ := sa.nextAt()
		tb, lb, pb := sb.nextAt()
		if !sb.bad && tb != token.EOF && tb != token.SEMICOLON {
			note(base + pb)
		}
		if ta != tb || la != lb {
			return false
		}
		if ta == token.EOF {
			return !sa.bad && !sb.bad
		}
	}
}

// nextAt is next, with the offset of the token.
func (g *goTokenScanner) nextAt() (token.Token, string, int) {
	for {
		pos, tok, lit := g.s.Scan()
		if tok == token.SEMICOLON && lit == "\n" {
			continue
		}
		return tok, lit, g.file.Offset(pos)
	}
}
