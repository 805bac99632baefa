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
	ms := make([]string, len(merges))
	for i, m := range merges {
		ms[i] = m[0]
	}
	if err := c.checkMerges(ctx, rep, ms); err != nil {
		return nil, err
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// checkMerges checks each merge of merges by the changes that come from
// none of its parents, adding to rep. One git diff-tree reads them all,
// so a range with thousands of merges costs one process, not one per
// merge and parent.
func (c *Checker) checkMerges(ctx context.Context, rep *Report, merges []string) error {
	if len(merges) == 0 {
		return nil
	}
	changes, err := c.mergeChanges(ctx, merges)
	if err != nil {
		return err
	}
	blobs, done, err := c.blobs(ctx)
	if err != nil {
		return err
	}
	defer done()
	for _, m := range merges {
		rep.Commits++
		for _, ch := range changes[m] {
			c.checkChange(rep, blobs, m, ch)
		}
	}
	return nil
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

// mergeChanges returns, for each merge commit of merges, its changes
// against its first parent at the paths where it differs from every
// parent: what git's combined diff (diff-tree -c) lists, the merge's own
// content rather than what it took from one side.
func (c *Checker) mergeChanges(ctx context.Context, merges []string) (map[string][]gitexec.Change, error) {
	in := []byte(strings.Join(merges, "\n") + "\n")
	out, err := c.Repo.OutputInput(ctx, in, "diff-tree", "--stdin", "-c", "-r", "-z", "--raw", "--no-renames", "--no-ext-diff",
		"--no-textconv", "--no-abbrev")
	if err != nil {
		return nil, fmt.Errorf("git diff-tree -c of %d merge(s): %w", len(merges), err)
	}
	return parseCombined(out)
}

// parseCombined reads diff-tree --stdin -c -z --raw output: per commit a
// token with its id, then per path a token "::<modes> <blobs> <statuses>"
// (one mode, blob and status per parent, then the merge's mode and blob)
// and a token with the path. Tokens end in NUL; a newline may precede a
// token. The parser knows which token comes next, so no path is ever read
// as a commit id. Each change is given against the first parent.
func parseCombined(out []byte) (map[string][]gitexec.Change, error) {
	chs := map[string][]gitexec.Change{}
	cur := ""
	br := bufio.NewReader(bytes.NewReader(out))
	for {
		tok, err := br.ReadBytes(0)
		if len(tok) == 0 && err == io.EOF {
			return chs, nil
		}
		t := string(bytes.TrimLeft(bytes.TrimSuffix(tok, []byte{0}), "\n"))
		if !strings.HasPrefix(t, "::") {
			if !gitexec.ValidOID(t) {
				return nil, fmt.Errorf("git diff-tree: unexpected line %q", t)
			}
			cur = t
			continue
		}
		f := strings.Fields(strings.TrimLeft(t, ":"))
		// f is a mode per parent and the merge's, a blob per parent and
		// the merge's, and the statuses: n parents give 2n+3 fields.
		n := (len(f) - 3) / 2
		if cur == "" || n < 2 || len(f) != 2*n+3 || len(f[2*n+2]) != n {
			return nil, fmt.Errorf("git diff-tree: unexpected change line %q", t)
		}
		path, perr := br.ReadBytes(0)
		if perr != nil && perr != io.EOF || len(path) == 0 {
			return nil, fmt.Errorf("git diff-tree: output ends before the path of a change")
		}
		chs[cur] = append(chs[cur], gitexec.Change{OldMode: f[0], NewMode: f[n], OldBlob: f[n+1], NewBlob: f[2*n+1], Status: f[2*n+2][0],
			Path: string(bytes.TrimSuffix(path, []byte{0}))})
	}
}
