package main

import (
	"context"
	"fmt"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitnotes"
	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/recordsource"
	"github.com/intentfs/intentfs/internal/workspace"
	"github.com/intentfs/intentfs/ledger"
)

// This file lets the history commands (log, blame, verify) work on a
// clone that has no ledger of its own: its records are the git notes
// under refs/notes/intentfs, and the versions they name are in git.

// withNotes makes s read the notes' records, and find versions in git,
// when the workspace has no local ledger.
func withNotes(ws cliWorkspace, s *history.Source) *history.Source {
	if hasLocalLedger(ws) {
		return s
	}
	ctx := context.Background()
	g, err := openGit(ctx, ws)
	if err != nil {
		// Not a git work tree: no notes, no records.
		s.Records = func(func(*ledger.Record) error) error { return nil }
		return s
	}
	return recordsource.FromNotes(ctx, g.repo, g.prefix, s)
}

// logFromNotes is `intentfs log` on a clone without a local ledger.
func logFromNotes(a *app, ws cliWorkspace, f ledger.Filter, limit int) error {
	var recs []*ledger.Record
	if err := queryNotes(context.Background(), ws, f, func(r *ledger.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		return err
	}
	if limit > 0 && len(recs) > limit {
		recs = recs[len(recs)-limit:]
	}
	if jsonOut(a) {
		return printJSONLines(a, recs)
	}
	if len(recs) == 0 {
		all, err := notedRecords(context.Background(), ws)
		if err != nil {
			return err
		}
		msg := "the ledger has no records yet"
		if len(all) > 0 {
			msg = "no records match (the notes have records; widen the filters)"
		}
		fmt.Fprintln(a.stdout, msg)
		return nil
	}
	printRecords(a, recs)
	return nil
}

// verifyNotes is `intentfs verify` of the notes: each origin's chain.
func verifyNotes(a *app, ws cliWorkspace) error {
	ctx := context.Background()
	g, err := openGit(ctx, ws)
	if err != nil {
		return err
	}
	set, err := gitnotes.Read(ctx, g.repo)
	if err != nil {
		return err
	}
	rep := gitnotes.VerifyChains(set)
	chainsOK := rep.OK()
	signers, err := loadSigners(ctx, a, g)
	if err != nil {
		return err
	}
	var sigs *gitnotes.Signatures
	if signers.Trust != nil {
		sigs = gitnotes.VerifySignatures(set, signers.Trust)
		for _, o := range sigs.Origins {
			if o.Signed < o.Records {
				rep.Problems = append(rep.Problems, fmt.Sprintf("origin %s (%s): %d of %d record(s) not covered by a checkpoint of a signer in %s: not counted",
					shortChain(o.Chain), o.Source, o.Records-o.Signed, o.Records, signers.File))
			}
		}
	}
	if jsonOut(a) {
		out := struct {
			*gitnotes.ChainReport
			Signers    *signersChoice       `json:"signers"`
			Signatures *gitnotes.Signatures `json:"signatures,omitempty"`
		}{rep, signers, sigs}
		if err := printJSON(a, out); err != nil {
			return err
		}
	} else {
		for _, o := range rep.Origins {
			// The notes carry a source directory only where its policy
			// opts in (notes.include: [source]).
			where := "source not published"
			if o.Source != "" {
				where = printable(o.Source)
			}
			fmt.Fprintf(a.stdout, "origin %s (%s): %d record(s), %s … %s\n", o.Chain, where, o.Records, o.First, o.Last)
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(a.stdout, "chain     %s\n", printable(p))
		}
		if sigs != nil {
			printSignatures(a, signers, &recordsource.SignatureCounts{File: signers.File, Origins: sigs.Origins})
		} else {
			printSignatures(a, signers, nil)
		}
		status := "OK"
		if !rep.OK() {
			status = fmt.Sprintf("FAILED: %d problem(s)", len(rep.Problems))
		}
		fmt.Fprintf(a.stdout, "%s: %d record(s) in the notes of %d commit(s), from %d origin(s), hash chains %s\n",
			status, rep.Records, rep.Notes, len(rep.Origins), map[bool]string{true: "intact", false: "BROKEN"}[chainsOK])
	}
	if !rep.OK() {
		return silentFailure{}
	}
	return nil
}

// isGitWorkTree reports whether the workspace is in a git work tree.
func isGitWorkTree(ws cliWorkspace) bool {
	_, err := openGit(context.Background(), ws)
	return err == nil
}

// initGit is the git part of `intentfs init`: the .gitignore of
// .orchestration/, and notes.rewriteRef when dir is a git work tree. It
// returns what it wrote.
func initGit(dir string) ([]string, error) {
	var written []string
	p, err := workspace.At(dir).WriteGitignore()
	if err != nil {
		return nil, err
	}
	if p != "" {
		written = append(written, p)
	}
	ctx := context.Background()
	repo, err := gitexec.Open(dir)
	if err != nil {
		return written, nil
	}
	if _, err := repo.Prefix(ctx); err != nil {
		return written, nil // not a git work tree (yet): intentfs notes sync sets it later
	}
	if err := gitnotes.EnsureRewriteConfig(ctx, repo); err != nil {
		return nil, err
	}
	return append(written, ".git/config (notes.rewriteRef = "+gitnotes.Ref+")"), nil
}
