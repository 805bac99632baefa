package gitcheck

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/intentfs/intentfs/internal/gitexec"
)

// CheckNew checks commits by id, as the mount does when a branch moves to
// commits made in it. A non-merge commit is checked as by Check. A merge
// commit is checked by the changes that come from none of its parents:
// a merge that only brings two histories together holds nothing new, but
// one whose tree differs from every parent at a path (an "evil" merge, or
// one made with git commit-tree and a crafted tree) authored that path,
// and the ledger must account for it like any change.
func (c *Checker) CheckNew(ctx context.Context, ids []string) (*Report, error) {
	for _, id := range ids {
		if !gitexec.ValidOID(id) {
			return nil, fmt.Errorf("%q is not a commit id", id)
		}
	}
	start := time.Now()
	merges, known := c.knownMerges(ids)
	if !known {
		var err error
		if merges, err = c.merges(ctx, ids); err != nil {
			return nil, err
		}
	}
	rep := &Report{Range: ids, Records: c.Index.Len(), Problems: []Finding{}, Notices: []Finding{}, Accounted: map[string][]string{}}
	if len(merges) < len(ids) {
		// Some are not merges: git log lists their changes.
		var err error
		if rep, err = c.run(ctx, []string{"--no-walk"}, ids); err != nil {
			return nil, err
		}
	}
	if len(merges) == 0 {
		return rep, nil
	}
	blobs, done, err := c.blobs(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	for _, m := range merges {
		changes, err := c.mergeChanges(ctx, m[0], m[1:])
		if err != nil {
			return nil, err
		}
		rep.Commits++
		for _, ch := range changes {
			c.checkChange(rep, blobs, m[0], ch)
		}
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// knownMerges returns the merges among ids from c.Parents, and whether
// it lists the parents of every one of them.
func (c *Checker) knownMerges(ids []string) ([][]string, bool) {
	if c.Parents == nil {
		return nil, false
	}
	var ms [][]string
	for _, id := range ids {
		ps, ok := c.Parents[id]
		if !ok {
			return nil, false
		}
		if len(ps) >= 2 {
			ms = append(ms, append([]string{id}, ps...))
		}
	}
	return ms, true
}

// merges returns, for each merge commit among ids, the commit followed by
// its parents.
func (c *Checker) merges(ctx context.Context, ids []string) ([][]string, error) {
	args := append([]string{"rev-list", "--no-walk", "--merges", "--parents", "--end-of-options"}, ids...)
	out, err := c.Repo.Output(ctx, args...)
	if err != nil {
		return nil, err
	}
	var ms [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) >= 3 {
			ms = append(ms, f)
		}
	}
	return ms, nil
}

// mergeChanges returns the changes of merge against its first parent at
// the paths where it differs from every parent.
func (c *Checker) mergeChanges(ctx context.Context, merge string, parents []string) ([]gitexec.Change, error) {
	first, err := c.diffTree(ctx, parents[0], merge)
	if err != nil {
		return nil, err
	}
	for _, p := range parents[1:] {
		if len(first) == 0 {
			break
		}
		other, err := c.diffTree(ctx, p, merge)
		if err != nil {
			return nil, err
		}
		differs := map[string]bool{}
		for _, ch := range other {
			differs[ch.Path] = true
		}
		kept := first[:0]
		for _, ch := range first {
			if differs[ch.Path] {
				kept = append(kept, ch)
			}
		}
		first = kept
	}
	return first, nil
}

// diffTree lists what changes from tree-ish a to b, as git log --raw does.
func (c *Checker) diffTree(ctx context.Context, a, b string) ([]gitexec.Change, error) {
	out, err := c.Repo.Output(ctx, "diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-abbrev", "--end-of-options", a, b)
	if err != nil {
		return nil, err
	}
	return parseRaw(out)
}

// parseRaw reads diff-tree -z --raw output: a ":<modes> <blobs> <status>"
// token, then the path, each ending in NUL.
func parseRaw(out []byte) ([]gitexec.Change, error) {
	var chs []gitexec.Change
	br := bufio.NewReader(bytes.NewReader(out))
	for {
		tok, err := br.ReadBytes(0)
		if len(tok) == 0 && err == io.EOF {
			return chs, nil
		}
		tok = bytes.TrimSuffix(tok, []byte{0})
		f := strings.Fields(strings.TrimPrefix(string(bytes.TrimLeft(tok, "\n")), ":"))
		if len(f) != 5 || len(f[4]) == 0 {
			return nil, fmt.Errorf("git diff-tree: unexpected change line %q", tok)
		}
		path, perr := br.ReadBytes(0)
		if perr != nil && perr != io.EOF || len(path) == 0 {
			return nil, fmt.Errorf("git diff-tree: output ends before the path of a change")
		}
		chs = append(chs, gitexec.Change{OldMode: f[0], NewMode: f[1], OldBlob: f[2], NewBlob: f[3], Status: f[4][0],
			Path: string(bytes.TrimSuffix(path, []byte{0}))})
	}
}
