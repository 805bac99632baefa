package main

import (
	"context"
	"errors"
	"os"
	"sort"
	"strconv"
	"unicode"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitnotes"
	"github.com/intentfs/intentfs/ledger"
)

// gitWorkspace is a workspace's git repository, for the commands that read
// commits and notes.
type gitWorkspace struct {
	repo *gitexec.Repo
	// prefix is the workspace's path below the top of the work tree.
	prefix string
}

// gitFromFlags finds the workspace the flags name and opens its git
// repository: the start of check and the notes commands.
func gitFromFlags(ctx context.Context, a *app) (workspace, *gitWorkspace, error) {
	ws, err := workspaceFromFlags(a)
	if err != nil {
		return workspace{}, nil, err
	}
	g, err := openGit(ctx, ws)
	return ws, g, err
}

func openGit(ctx context.Context, ws workspace) (*gitWorkspace, error) {
	repo, err := gitexec.Open(ws.source)
	if err != nil {
		return nil, err
	}
	prefix, err := repo.Prefix(ctx)
	if err != nil {
		return nil, err
	}
	return &gitWorkspace{repo: repo, prefix: prefix}, nil
}

// hasLocalLedger reports whether the workspace has a ledger of its own
// (else its records are only in the notes: a fresh clone).
func hasLocalLedger(ws workspace) bool {
	files, err := ledger.Files(ws.layout().LedgerPath())
	return err == nil && len(files) > 0
}

// allRecords calls fn for every record of the local ledger and then for
// each record of the notes not in it, and returns how many of each.
func allRecords(ctx context.Context, ws workspace, g *gitWorkspace, fn func(*ledger.Record)) (local, noted int, err error) {
	seen := map[string]bool{}
	err = ledger.Scan(ws.layout().LedgerPath(), func(_ int, r *ledger.Record) error {
		seen[r.ID] = true
		local++
		fn(r)
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, 0, err
	}
	if g == nil {
		return local, 0, nil
	}
	set, err := gitnotes.Read(ctx, g.repo)
	if err != nil {
		return local, 0, err
	}
	for _, l := range set.Lines {
		if !seen[l.Record.ID] {
			noted++
			fn(l.Record)
		}
	}
	return local, noted, nil
}

// notedRecords returns the records of the notes in time order, for the
// commands that show history on a clone without a ledger of its own.
func notedRecords(ctx context.Context, ws workspace) ([]*ledger.Record, error) {
	g, err := openGit(ctx, ws)
	if err != nil {
		return nil, nil // not a git work tree: no notes, no records
	}
	set, err := gitnotes.Read(ctx, g.repo)
	if err != nil {
		return nil, err
	}
	recs := make([]*ledger.Record, 0, len(set.Lines))
	for _, l := range set.Lines {
		recs = append(recs, l.Record)
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Timestamp < recs[j].Timestamp })
	return recs, nil
}

// queryNotes is ledger.Query over the notes.
func queryNotes(ctx context.Context, ws workspace, f ledger.Filter, fn func(*ledger.Record) error) error {
	recs, err := notedRecords(ctx, ws)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if f.Match(r) {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// printable returns s as it is when every rune is printable, else quoted
// with escapes: paths and messages from a repository are the agent's, and
// a terminal must not interpret them.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
