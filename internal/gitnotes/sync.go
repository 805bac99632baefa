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
	pos ledger.Position
}

// Cursor lets a long-lived caller (the daemon, which syncs after every
// commit made in the mount) read only what the ledger gained since its
// last Sync, instead of the whole ledger and every note: a ledger of a
// million records takes tens of seconds to read in full. It holds the
// position of the first record no note has yet, and the notes ref as that
// Sync left it; when the ref has moved since (a notes fetch, an amend or
// rebase copying notes, a sync from the command line), the next Sync reads
// everything again. The zero Cursor starts with a full Sync.
type Cursor struct {
	pos      ledger.Position
	notesTip string
	noted    int
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
// always a prefix of the chain. A commit made in the mount also gets its
// own commit record (and what came before it), so its note says it passed
// the gate. Records after the last committed change stay pending until a
// later commit or sync.
//
// Each record goes into the notes in its public form (ledger.PublicForm)
// with the fields keep names: the notes travel to every remote, and the
// local ledger keeps the rest. A record written before public forms
// existed (it has no prev_public) goes in as its exact line, or the
// chain could not be followed through it.
func Sync(ctx context.Context, repo *gitexec.Repo, ledgerPath, prefix string, keep ledger.Keep) (*SyncResult, error) {
	return SyncFrom(ctx, repo, ledgerPath, prefix, keep, &Cursor{})
}

// SyncFrom is Sync resuming at cur, which it moves on.
func SyncFrom(ctx context.Context, repo *gitexec.Repo, ledgerPath, prefix string, keep ledger.Keep, cur *Cursor) (*SyncResult, error) {
	res := &SyncResult{Commits: map[string]int{}}
	if err := EnsureRewriteConfig(ctx, repo); err != nil {
		return nil, err
	}
	tip, err := refTip(ctx, repo, Ref)
	if err != nil {
		return nil, err
	}
	pending, end, err := pendingLines(ctx, repo, ledgerPath, cur, tip, res)
	if err != nil {
		return nil, err
	}
	if len(pending) == 0 {
		return res, cur.moveTo(ctx, repo, pending, end, 0, res.AlreadyNoted)
	}
	if _, err := repo.Output(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		res.Pending = len(pending)
		return res, cur.moveTo(ctx, repo, pending, end, 0, res.AlreadyNoted) // no commit yet
	}
	plan, attached, err := planAttachments(ctx, repo, prefix, pending)
	if err != nil {
		return nil, err
	}
	if plan, attached, err = attachTrailingCheckpoints(ctx, repo, pending, plan, attached); err != nil {
		return nil, err
	}
	if err := attachPlan(ctx, repo, pending, plan, keep, res); err != nil {
		return nil, err
	}
	res.Pending = len(pending) - attached
	return res, cur.moveTo(ctx, repo, pending, end, attached, res.AlreadyNoted)
}

// moveTo leaves cur at the first of pending not attached (at end, the
// ledger's end, when all were), with the notes ref as it is now.
func (cur *Cursor) moveTo(ctx context.Context, repo *gitexec.Repo, pending []pendingLine, end ledger.Position, attached, alreadyNoted int) error {
	cur.pos = end
	if attached < len(pending) {
		cur.pos = pending[attached].pos
	}
	cur.noted = alreadyNoted + attached
	t, err := refTip(ctx, repo, Ref)
	cur.notesTip = t
	return err
}

// attachment gives the commit the pending records [start, end).
type attachment struct {
	commit     string
	start, end int
}

// attachPlanner walks the commits reachable from HEAD, newest first, and
// gives each the pending records up to the last one it accounts for.
type attachPlanner struct {
	prefix string
	blobs  *gitexec.Blobs
	ix     *gitcheck.Index
	// commitRecord maps a commit made in the mount to the index of its
	// own commit record (made when the gate let the branch move to it),
	// which belongs in its note, with the changes it holds.
	commitRecord map[string]int
	// next is the first pending record no commit has taken yet.
	next int
	plan []attachment
}

// planAttachments plans which commit each pending record goes to; it
// returns the plan and how many records, a prefix of pending, it attaches.
func planAttachments(ctx context.Context, repo *gitexec.Repo, prefix string, pending []pendingLine) ([]attachment, int, error) {
	pl := &attachPlanner{prefix: prefix, ix: gitcheck.NewIndex(), commitRecord: map[string]int{}}
	for i, p := range pending {
		pl.ix.Add(p.rec)
		if g := p.rec.Gov(); g.Event == ledger.EventCommit && g.Commit != "" {
			pl.commitRecord[g.Commit] = i
		}
	}
	opts := []string{}
	if t, err := time.Parse(time.RFC3339Nano, pending[0].rec.Timestamp); err == nil {
		opts = append(opts, "--since="+t.Add(-sinceSlack).UTC().Format(time.RFC3339))
	}
	blobs, err := repo.Blobs(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer blobs.Close()
	pl.blobs = blobs
	if err := repo.Commits(ctx, gitexec.Query{Opts: opts, Revs: []string{"HEAD"}}, pl.commit); err != nil {
		return nil, 0, fmt.Errorf("reading commits: %w", err)
	}
	return pl.plan, pl.next, nil
}

// commit takes the pending records c accounts for.
func (pl *attachPlanner) commit(c *gitexec.Commit) error {
	if i, ok := pl.commitRecord[c.ID]; ok {
		// A commit made in the mount holds what was written before its
		// commit record: a later write of the same content (git restoring
		// the file after a stash) is not part of it, and would carry the
		// next commits' records off with it.
		pl.take(c.ID, i)
		return nil
	}
	last := -1
	for _, ch := range c.Changes {
		seq, err := pl.lastRecordOf(ch)
		if err != nil {
			return err
		}
		last = max(last, seq)
	}
	pl.take(c.ID, last)
	return nil
}

// take gives commit the records from next up to last, if it reaches past
// what earlier commits took.
func (pl *attachPlanner) take(commit string, last int) {
	if last >= pl.next {
		pl.plan = append(pl.plan, attachment{commit, pl.next, last + 1})
		pl.next = last + 1
	}
}

// lastRecordOf returns the index of the last pending record that made ch
// (its path with the committed content, mode or link, or its deletion),
// or -1.
func (pl *attachPlanner) lastRecordOf(ch gitexec.Change) (int, error) {
	rel, ok := strings.CutPrefix(ch.Path, pl.prefix)
	if !ok {
		return -1, nil
	}
	var entries []gitcheck.Entry
	switch {
	case ch.Status == 'D':
		entries = pl.ix.Deleted(rel)
	case ch.NewMode == "120000":
		h, err := pl.blobs.Hash(ch.NewBlob)
		if err != nil {
			return -1, err
		}
		entries = pl.ix.Symlinks(rel, h)
	case ch.Status == 'M' && ch.OldBlob == ch.NewBlob:
		entries = pl.ix.Modes(rel)
	case ch.NewMode != "160000":
		h, err := pl.blobs.Hash(ch.NewBlob)
		if err != nil {
			return -1, err
		}
		entries = pl.ix.Written(rel, h)
	}
	last := -1
	for _, e := range entries {
		last = max(last, e.Seq)
	}
	return last, nil
}

// attachPlan writes the plan's records into the commits' notes, each in
// its public form with what keep names, and counts them in res.
func attachPlan(ctx context.Context, repo *gitexec.Repo, pending []pendingLine, plan []attachment, keep ledger.Keep, res *SyncResult) error {
	notes := map[string][][]byte{}
	var order []string
	for _, a := range plan {
		if _, ok := notes[a.commit]; !ok {
			order = append(order, a.commit)
		}
		for _, p := range pending[a.start:a.end] {
			line, err := noteLine(p, keep)
			if err != nil {
				return err
			}
			notes[a.commit] = append(notes[a.commit], line)
		}
		res.Commits[a.commit] += a.end - a.start
		res.Attached += a.end - a.start
	}
	return appendNotes(ctx, repo, order, notes)
}

// noteLine is the line a note carries for a ledger line.
func noteLine(p pendingLine, keep ledger.Keep) ([]byte, error) {
	if p.rec.Gov().PrevPublic == "" {
		return p.raw, nil
	}
	line, err := ledger.PublicForm(p.raw, keep)
	if err != nil {
		return nil, fmt.Errorf("ledger line %d: %w", p.pos.Line, err)
	}
	return line, nil
}

// pendingLines reads the ledger's lines that no note has: from cur on
// when the notes ref is where cur's Sync left it (everything before cur
// is in a note, everything after it was not when that Sync ended), else
// all of the ledger, less the records the notes hold.
func pendingLines(ctx context.Context, repo *gitexec.Repo, ledgerPath string, cur *Cursor, tip string, res *SyncResult) ([]pendingLine, ledger.Position, error) {
	var noted noteIDs
	from := cur.pos
	if from.IsZero() || tip != cur.notesTip {
		from = ledger.Position{}
		set, err := readIDs(ctx, repo)
		if err != nil {
			return nil, from, err
		}
		noted = set
	} else {
		res.AlreadyNoted = cur.noted
	}
	for {
		var pending []pendingLine
		end, found, err := ledger.ScanRawFrom(ledgerPath, from, func(file string, pos ledger.Position, raw []byte) error {
			if len(raw) == 0 {
				return nil
			}
			var r ledger.Record
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("%s:%d: not a ledger record: %w", file, pos.Line, err)
			}
			if noted != nil && noted.Has(r.ID) {
				res.AlreadyNoted++
				return nil
			}
			pending = append(pending, pendingLine{raw: append([]byte(nil), raw...), rec: &r, pos: pos})
			return nil
		})
		if errors.Is(err, os.ErrNotExist) {
			return nil, from, nil
		}
		if err != nil {
			return nil, from, fmt.Errorf("reading the ledger: %w", err)
		}
		if found {
			return pending, end, nil
		}
		// The file cur named is gone: read everything.
		set, err := readIDs(ctx, repo)
		if err != nil {
			return nil, from, err
		}
		noted, from, res.AlreadyNoted = set, ledger.Position{}, 0
	}
}

// noteIDs are the record ids the notes hold: all a sync needs to know of
// them, so it keeps no more (the daemon syncs after every commit, and the
// agent can write the notes).
type noteIDs map[string]struct{}

// Has reports whether id is in a note (false for a nil set).
func (n noteIDs) Has(id string) bool { _, ok := n[id]; return ok }

// readIDs reads the record ids of the notes, within DefaultLimits; a note
// over a cap is left out (its records are then attached again, which the
// notes' cat_sort_uniq merge keeps once) and logged by the caller's error
// path only if git fails.
func readIDs(ctx context.Context, repo *gitexec.Repo) (noteIDs, error) {
	ids := noteIDs{}
	var rec struct {
		ID string `json:"id"`
	}
	err := eachNote(ctx, repo, DefaultLimits(), func(_ string, data []byte) {
		for raw := range bytes.SplitSeq(data, []byte{'\n'}) {
			rec.ID = ""
			if json.Unmarshal(bytes.TrimRight(raw, "\r"), &rec) == nil && rec.ID != "" {
				ids[rec.ID] = struct{}{}
			}
		}
	}, func(string, string) {})
	return ids, err
}

// refTip is the commit a ref names, or "" when there is none.
func refTip(ctx context.Context, repo *gitexec.Repo, ref string) (string, error) {
	out, err := repo.Output(ctx, "for-each-ref", "--format=%(objectname)", ref)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", ref, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// appendNotes adds lines to the notes of commits, keeping what each note
// holds, as one commit on Ref written by one git fast-import: a sync of
// thousands of commits is one process, not one per commit. Every line
// keeps its exact bytes (fast-import stores data as given), and with them
// its place in its hash chain.
func appendNotes(ctx context.Context, repo *gitexec.Repo, order []string, lines map[string][][]byte) error {
	if len(order) == 0 {
		return nil
	}
	existing, err := List(ctx, repo)
	if err != nil {
		return err
	}
	blobOf := map[string]string{}
	for _, n := range existing {
		blobOf[n.Commit] = n.Blob
	}
	blobs, err := repo.Blobs(ctx)
	if err != nil {
		return err
	}
	defer blobs.Close()
	var stream bytes.Buffer
	msg := fmt.Sprintf("intentfs notes sync: %d commit(s)\n", len(order))
	fmt.Fprintf(&stream, "commit %s\ncommitter intentfs <intentfs@localhost> %d +0000\ndata %d\n%s", Ref, time.Now().Unix(), len(msg), msg)
	if HasRef(ctx, repo, Ref) {
		fmt.Fprintf(&stream, "from %s^0\n", Ref)
	}
	lim := DefaultLimits()
	for _, commit := range order {
		var note bytes.Buffer
		if b, ok := blobOf[commit]; ok {
			old, err := blobs.Read(b, min(MaxNoteBytes, lim.Bytes))
			if err != nil {
				return fmt.Errorf("reading the note of %s: %w (the notes read are capped at %d bytes; raise it with %s=N)", commit, err, lim.Bytes, EnvMaxBytes)
			}
			if n := lineCount(old); n > lim.NoteRecords {
				return fmt.Errorf("the note of %s holds %d lines, more than the %d records a note may hold (the cap; raise it with %s=N, or remove the note with git notes --ref=%s remove %s)", commit, n, lim.NoteRecords, EnvMaxNoteRecords, Ref, commit)
			}
			note.Write(old)
			if len(old) > 0 && old[len(old)-1] != '\n' {
				note.WriteByte('\n')
			}
		}
		for _, l := range lines[commit] {
			note.Write(l)
			note.WriteByte('\n')
		}
		fmt.Fprintf(&stream, "N inline %s\ndata %d\n", commit, note.Len())
		stream.Write(note.Bytes())
		stream.WriteByte('\n')
	}
	stream.WriteString("done\n")
	if _, err := repo.OutputInput(ctx, stream.Bytes(), "fast-import", "--quiet", "--done"); err != nil {
		return fmt.Errorf("writing notes: %w", err)
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
