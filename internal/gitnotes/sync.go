package gitnotes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/intentfs/intentfs/internal/gitcheck"
	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/ledger"
)

// SyncResult says what Sync attached.
type SyncResult struct {
	// Commits maps each commit given a note (or more lines in its note)
	// to the number of records added.
	Commits map[string]int `json:"commits"`
	// Attached is the number of records attached; Pending the number of
	// local records no commit accounts for yet (work not committed).
	Attached int `json:"attached"`
	Pending  int `json:"pending"`
	// AlreadyNoted is the number of local records already in the notes.
	AlreadyNoted int `json:"already_noted"`
}

// pendingLine is a ledger line not yet in any note.
type pendingLine struct {
	raw []byte
	rec *ledger.Record
}

// Since bounds how far back Sync looks for the commits of a record: a
// commit is made after the record it holds; the slack covers clocks that
// disagree.
const sinceSlack = 24 * time.Hour

// Sync attaches the records of the local ledger that are in no note yet
// to the commits they produced, among the non-merge commits reachable
// from HEAD. Records are taken in ledger order: a commit gets every
// pending record up to the last one whose change it contains (its path
// with the committed content, or its deletion), so records that change no
// committed path (selections, transitions, denials, and writes later
// overwritten) ride with the next commit, and the records attached are
// always a prefix of the chain. Records after the last committed change
// stay pending until a later commit or sync.
func Sync(ctx context.Context, repo *gitexec.Repo, ledgerPath, prefix string) (*SyncResult, error) {
	res := &SyncResult{Commits: map[string]int{}}
	if err := EnsureRewriteConfig(ctx, repo); err != nil {
		return nil, err
	}
	noted, err := Read(ctx, repo)
	if err != nil {
		return nil, err
	}
	var pending []pendingLine
	err = ledger.ScanRaw(ledgerPath, func(file string, line int, raw []byte) error {
		if len(raw) == 0 {
			return nil
		}
		var r ledger.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%s:%d: not a ledger record: %w", file, line, err)
		}
		if noted.Has(r.ID) {
			res.AlreadyNoted++
			return nil
		}
		pending = append(pending, pendingLine{raw: append([]byte(nil), raw...), rec: &r})
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading the ledger: %w", err)
	}
	if len(pending) == 0 {
		return res, nil
	}
	ix := gitcheck.NewIndex()
	for _, p := range pending {
		ix.Add(p.rec)
	}
	opts := []string{}
	if t, err := time.Parse(time.RFC3339Nano, pending[0].rec.Timestamp); err == nil {
		opts = append(opts, "--since="+t.Add(-sinceSlack).UTC().Format(time.RFC3339))
	}
	if _, err := repo.Output(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		res.Pending = len(pending)
		return res, nil // no commit yet
	}
	blobs, err := repo.Blobs(ctx)
	if err != nil {
		return nil, err
	}
	defer blobs.Close()
	cursor := 0
	type attach struct {
		commit     string
		start, end int
	}
	var plan []attach
	err = repo.Commits(ctx, gitexec.Query{Opts: opts, Revs: []string{"HEAD"}}, func(c *gitexec.Commit) error {
		last := -1
		for _, ch := range c.Changes {
			rel, ok := strings.CutPrefix(ch.Path, prefix)
			if !ok {
				continue
			}
			var entries []gitcheck.Entry
			switch {
			case ch.Status == 'D':
				entries = ix.Deleted(rel)
			case ch.NewMode == "120000":
				entries = ix.Symlinks(rel)
			case ch.Status == 'M' && ch.OldBlob == ch.NewBlob:
				entries = ix.Modes(rel)
			case ch.NewMode != "160000":
				h, err := blobs.Hash(ch.NewBlob)
				if err != nil {
					return err
				}
				entries = ix.Written(rel, h)
			}
			for _, e := range entries {
				last = max(last, e.Seq)
			}
		}
		if last >= cursor {
			plan = append(plan, attach{c.ID, cursor, last + 1})
			cursor = last + 1
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading commits: %w", err)
	}
	for _, a := range plan {
		lines := make([][]byte, 0, a.end-a.start)
		for _, p := range pending[a.start:a.end] {
			lines = append(lines, p.raw)
		}
		if err := appendNote(ctx, repo, a.commit, lines); err != nil {
			return nil, err
		}
		res.Commits[a.commit] += len(lines)
		res.Attached += len(lines)
	}
	res.Pending = len(pending) - cursor
	return res, nil
}

// appendNote adds lines to commit's note, keeping what it holds.
func appendNote(ctx context.Context, repo *gitexec.Repo, commit string, lines [][]byte) error {
	old, err := noteOf(ctx, repo, commit)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if len(old) > 0 {
		buf.Write(old)
		if old[len(old)-1] != '\n' {
			buf.WriteByte('\n')
		}
	}
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	// hash-object --stdin without --path applies no filter; notes add -C
	// takes the blob as it is (no stripspace), so every line keeps its
	// exact bytes and its place in the hash chain.
	blob, err := repo.OutputInput(ctx, buf.Bytes(), "hash-object", "-w", "--stdin")
	if err != nil {
		return fmt.Errorf("writing the note of %s: %w", commit, err)
	}
	id := strings.TrimSpace(string(blob))
	if _, err := repo.Output(ctx, "notes", "--ref="+Ref, "add", "-f", "-C", id, "--end-of-options", commit); err != nil {
		return fmt.Errorf("attaching the note to %s: %w", commit, err)
	}
	return nil
}

// EnsureRewriteConfig sets notes.rewriteRef so that git commit --amend and
// git rebase carry the notes to the rewritten commits (notes.rewrite.amend
// and notes.rewrite.rebase are on by default), and notes.rewriteMode to
// cat_sort_uniq so a rewrite that meets two notes keeps each line once.
// Existing settings of other refs are kept.
func EnsureRewriteConfig(ctx context.Context, repo *gitexec.Repo) error {
	out, _ := repo.Output(ctx, "config", "--local", "--get-all", "notes.rewriteRef")
	for _, l := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(l) == Ref {
			return nil
		}
	}
	if _, err := repo.Output(ctx, "config", "--local", "--add", "notes.rewriteRef", Ref); err != nil {
		return fmt.Errorf("setting notes.rewriteRef: %w", err)
	}
	if mode, _ := repo.Line(ctx, "config", "--local", "--get", "notes.rewriteMode"); mode == "" {
		if _, err := repo.Output(ctx, "config", "--local", "notes.rewriteMode", "cat_sort_uniq"); err != nil {
			return fmt.Errorf("setting notes.rewriteMode: %w", err)
		}
	}
	return nil
}
