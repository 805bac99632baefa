package main

import (
	"context"
	"strconv"
	"unicode"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/ledgersign"
	"github.com/intentfs/intentfs/internal/recordsource"
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
func gitFromFlags(ctx context.Context, a *app) (cliWorkspace, *gitWorkspace, error) {
	ws, err := workspaceFromFlags(a)
	if err != nil {
		return cliWorkspace{}, nil, err
	}
	g, err := openGit(ctx, ws)
	return ws, g, err
}

func openGit(ctx context.Context, ws cliWorkspace) (*gitWorkspace, error) {
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
func hasLocalLedger(ws cliWorkspace) bool {
	return recordsource.HasLedger(ws.layout().LedgerPath())
}

// allRecords is recordsource.All on the workspace's ledger and, when it
// is in a git work tree (g not nil), its notes.
func allRecords(ctx context.Context, ws cliWorkspace, g *gitWorkspace, withNotes *bool, trust *ledgersign.Trust, sink recordsource.Sink) (recordsource.Counts, error) {
	var repo *gitexec.Repo
	if g != nil {
		repo = g.repo
	}
	return recordsource.All(ctx, ws.layout().LedgerPath(), repo, withNotes, trust, sink)
}

// notedRecords returns the records of the notes in time order, for the
// commands that show history on a clone without a ledger of its own.
func notedRecords(ctx context.Context, ws cliWorkspace) ([]*ledger.Record, error) {
	g, err := openGit(ctx, ws)
	if err != nil {
		return nil, nil // not a git work tree: no notes, no records
	}
	return recordsource.Noted(ctx, g.repo)
}

// queryNotes is ledger.Query over the notes.
func queryNotes(ctx context.Context, ws cliWorkspace, f ledger.Filter, fn func(*ledger.Record) error) error {
	g, err := openGit(ctx, ws)
	if err != nil {
		return nil // not a git work tree: no notes, no records
	}
	return recordsource.QueryNotes(ctx, g.repo, f, fn)
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
