package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/intentfs/intentfs/internal/gitexec"
)

// Entry is what a tip's tree holds at a path.
type Entry struct {
	// Kind is "blob", "tree", "commit" (a submodule) or "" (absent).
	Kind string
	// Mode is git's: "100644", "100755", "120000" (a symlink), "040000",
	// "160000".
	Mode string
	OID  string
	// SHA256 is "sha256:<hex>" of a blob's bytes, the ledger's content
	// hash; empty for a tree, a submodule, and a blob larger than
	// MaxBlobBytes (whose content is then never taken as upstream's).
	SHA256 string
	// Size is a blob's size in bytes.
	Size int64
}

// History is what a path held in the history of a tip.
type History struct {
	// Blobs holds the sha256 ("sha256:<hex>") of every content the path
	// had: in the tip, and before and after each of the newest
	// MaxVersions non-merge commits reachable from the tip that touched
	// it. Blobs larger than MaxBlobBytes are left out.
	Blobs map[string]bool
	// WasTree is set when the path was a directory in the tip or in one
	// of those commits.
	WasTree bool
	// Truncated is set when MaxVersions commits were read: older contents
	// may be missing.
	Truncated bool
}

// cacheKey names a remembered answer: of kind ('e' Entry, 'v' Versions)
// for rel in the tree of commit.
type cacheKey struct {
	commit, rel string
	kind        byte
}

// checkRel refuses a path that is not a plain workspace-relative one.
func checkRel(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) {
		return fmt.Errorf("%q is not a workspace-relative path", rel)
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("%q is not a clean workspace-relative path (empty, . or .. component)", rel)
		}
	}
	return nil
}

// checkTip refuses a tip that does not name a commit.
func checkTip(tip Tip) error {
	if !gitexec.ValidOID(tip.Commit) {
		return fmt.Errorf("%w: the tip %q is not a commit id", ErrNoTip, tip.Commit)
	}
	return nil
}

// cached returns a remembered answer.
func (m *Mirror) cached(k cacheKey) (any, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.cache[k]
	return v, ok
}

// remember keeps an answer; the cache is emptied when full.
func (m *Mirror) remember(k cacheKey, v any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.cache) >= maxCache {
		clear(m.cache)
	}
	m.cache[k] = v
}

// reader returns the mirror repository and its cat-file process (started,
// or started again after a failure).
func (m *Mirror) reader() (*gitexec.Repo, *gitexec.Blobs, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, nil, ErrClosed
	}
	if m.repo == nil {
		return nil, nil, fmt.Errorf("%w: the mirror is not open", ErrNoTip)
	}
	if m.blobs == nil || m.blobs.Broken() {
		if m.blobs != nil {
			_ = m.blobs.Close() // reaps it; it failed before, and said so then
		}
		b, err := m.repo.Blobs(m.readCtx)
		if err != nil {
			m.blobs = nil
			return nil, nil, fmt.Errorf("reading the upstream mirror: %w", err)
		}
		m.blobs = b
	}
	return m.repo, m.blobs, nil
}

// Entry returns what tip's tree holds at rel, a path relative to the top
// of the repository (the source root). A path that is absent, or below a
// file, is Entry{} with no error.
func (m *Mirror) Entry(ctx context.Context, tip Tip, rel string) (Entry, error) {
	if err := checkRel(rel); err != nil {
		return Entry{}, err
	}
	if err := checkTip(tip); err != nil {
		return Entry{}, err
	}
	k := cacheKey{tip.Commit, rel, 'e'}
	if v, ok := m.cached(k); ok {
		return v.(Entry), nil
	}
	repo, blobs, err := m.reader()
	if err != nil {
		return Entry{}, err
	}
	out, err := repo.Output(ctx, "ls-tree", "-z", "-l", "--full-tree", tip.Commit, "--", ":(literal)"+rel)
	if err != nil {
		return Entry{}, fmt.Errorf("reading %s in the upstream's %s: %w", rel, tip.Commit, err)
	}
	e, err := parseLsTree(out, rel)
	if err != nil {
		return Entry{}, err
	}
	if e.Kind == "blob" && e.Size <= MaxBlobBytes {
		if e.SHA256, err = hashBlob(ctx, blobs, e.OID); err != nil {
			return Entry{}, err
		}
	}
	m.remember(k, e)
	return e, nil
}

// parseLsTree finds rel in `ls-tree -z -l` output: records
// "<mode> SP <type> SP <oid> SP+ <size> TAB <path>" ending in NUL.
func parseLsTree(out []byte, rel string) (Entry, error) {
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 4 {
			return Entry{}, fmt.Errorf("git ls-tree: unexpected output %q", rec)
		}
		if string(path) != rel {
			continue
		}
		e := Entry{Mode: f[0], Kind: f[1], OID: f[2]}
		if e.Mode == "40000" {
			e.Mode = "040000" // git prints trees' mode without the leading 0
		}
		if e.Kind == "blob" {
			size, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil || size < 0 {
				return Entry{}, fmt.Errorf("git ls-tree: bad size in %q", rec)
			}
			e.Size = size
		}
		return e, nil
	}
	return Entry{}, nil
}

// hashBlob returns a blob's sha256, killing the reading process if ctx
// ends first (the next read starts another).
func hashBlob(ctx context.Context, blobs *gitexec.Blobs, oid string) (string, error) {
	stop := context.AfterFunc(ctx, blobs.Kill)
	defer stop()
	h, err := blobs.Hash(oid)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("hashing the upstream's %s: %w", oid, ctx.Err())
		}
		return "", fmt.Errorf("hashing the upstream's %s: %w", oid, err)
	}
	return h, nil
}

// Versions returns every content rel had in tip's history (see History).
// It reads the newest MaxVersions non-merge commits reachable from the tip
// that touch rel, following every side of a merge (--full-history).
func (m *Mirror) Versions(ctx context.Context, tip Tip, rel string) (History, error) {
	if err := checkRel(rel); err != nil {
		return History{}, err
	}
	if err := checkTip(tip); err != nil {
		return History{}, err
	}
	k := cacheKey{tip.Commit, rel, 'v'}
	if v, ok := m.cached(k); ok {
		return v.(History), nil
	}
	cur, err := m.Entry(ctx, tip, rel)
	if err != nil {
		return History{}, err
	}
	repo, blobs, err := m.reader()
	if err != nil {
		return History{}, err
	}
	h := History{Blobs: map[string]bool{}, WasTree: cur.Kind == "tree"}
	if cur.SHA256 != "" {
		h.Blobs[cur.SHA256] = true
	}
	oids := map[string]bool{}
	commits := 0
	err = repo.Commits(ctx, gitexec.Query{Opts: []string{"--full-history", "--max-count=" + strconv.Itoa(MaxVersions)},
		Revs: []string{tip.Commit}, Paths: []string{rel}}, func(c *gitexec.Commit) error {
		commits++
		for _, ch := range c.Changes {
			if strings.HasPrefix(ch.Path, rel+"/") {
				h.WasTree = true
				continue
			}
			if ch.Path != rel {
				continue
			}
			for _, side := range [][2]string{{ch.OldMode, ch.OldBlob}, {ch.NewMode, ch.NewBlob}} {
				if !gitexec.ZeroOID(side[1]) && side[0] != "160000" {
					oids[side[1]] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return History{}, fmt.Errorf("reading the history of %s in the upstream: %w", rel, err)
	}
	h.Truncated = commits >= MaxVersions
	sizes, err := blobSizes(ctx, repo, oids)
	if err != nil {
		return History{}, err
	}
	for oid, size := range sizes {
		if size > MaxBlobBytes {
			continue
		}
		sum, err := hashBlob(ctx, blobs, oid)
		if err != nil {
			return History{}, err
		}
		h.Blobs[sum] = true
	}
	m.remember(k, h)
	return h, nil
}

// blobSizes returns the size of each of oids that is a blob, in one
// `cat-file --batch-check`.
func blobSizes(ctx context.Context, repo *gitexec.Repo, oids map[string]bool) (map[string]int64, error) {
	sizes := map[string]int64{}
	if len(oids) == 0 {
		return sizes, nil
	}
	var in bytes.Buffer
	for oid := range oids {
		in.WriteString(oid + "\n")
	}
	out, err := repo.OutputInput(ctx, in.Bytes(), "cat-file", "--batch-check")
	if err != nil {
		return nil, fmt.Errorf("sizing the upstream's blobs: %w", err)
	}
	for line := range strings.SplitSeq(strings.TrimSuffix(string(out), "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[1] == "blob" && oids[f[0]] {
			size, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("git cat-file: bad size in %q", line)
			}
			sizes[f[0]] = size
		}
	}
	return sizes, nil
}

// Read returns the bytes of the blob oid from the mirror, if it is at most
// max bytes.
func (m *Mirror) Read(ctx context.Context, oid string, max int64) ([]byte, error) {
	if !gitexec.ValidOID(oid) {
		return nil, fmt.Errorf("%q is not an object id", oid)
	}
	_, blobs, err := m.reader()
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, blobs.Kill)
	defer stop()
	b, err := blobs.Read(oid, max)
	if err != nil {
		if ctx.Err() != nil {
			err = errors.Join(err, ctx.Err())
		}
		return nil, fmt.Errorf("reading the upstream's %s: %w", oid, err)
	}
	return b, nil
}
