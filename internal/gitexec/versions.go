package gitexec

import (
	"context"
	"fmt"
	"sync"
)

// Versions finds the bytes of a file's recorded versions in git's history:
// on a clone without the object store, the versions that were committed
// are still in git. Each path's history is read once, by one log pass.
type Versions struct {
	repo   *Repo
	blobs  *Blobs
	prefix string
	// MaxBytes bounds a version read.
	MaxBytes int64

	mu sync.Mutex
	// byPath maps a path to its committed versions: sha256 → object id.
	byPath map[string]map[string]string
}

// NewVersions returns a finder over the history of HEAD, the branches,
// tags and remote-tracking branches (not the notes); prefix is the
// workspace's path below the top of the work tree. Close it when done.
func (r *Repo) NewVersions(ctx context.Context, prefix string) (*Versions, error) {
	b, err := r.Blobs(ctx)
	if err != nil {
		return nil, err
	}
	return &Versions{repo: r, blobs: b, prefix: prefix, MaxBytes: 64 << 20, byPath: map[string]map[string]string{}}, nil
}

// Close ends the finder's git process.
func (v *Versions) Close() error { return v.blobs.Close() }

// Find returns the bytes of the version of workspace path rel whose
// content hash is hash, if any commit holds it.
func (v *Versions) Find(ctx context.Context, rel, hash string) ([]byte, error) {
	v.mu.Lock()
	known, ok := v.byPath[rel]
	v.mu.Unlock()
	if !ok {
		known = map[string]string{}
		err := v.repo.Commits(ctx, Query{Opts: []string{"--branches", "--tags", "--remotes"}, Revs: []string{"HEAD"}, Paths: []string{v.prefix + rel}}, func(c *Commit) error {
			for _, ch := range c.Changes {
				if ch.Path != v.prefix+rel || ZeroOID(ch.NewBlob) || ch.NewMode == "160000" {
					continue
				}
				h, err := v.blobs.Hash(ch.NewBlob)
				if err != nil {
					return err
				}
				known[h] = ch.NewBlob
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		v.mu.Lock()
		v.byPath[rel] = known
		v.mu.Unlock()
	}
	oid, ok := known[hash]
	if !ok {
		return nil, fmt.Errorf("no commit holds %s with content %s", rel, hash)
	}
	return v.blobs.Read(oid, v.MaxBytes)
}
