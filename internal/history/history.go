// Package history replays the ledger against the object store: unified
// diffs of recorded changes, blame (which record last wrote each line of a
// file), and revert (the inverse of recorded changes, applied to the
// source).
package history

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/intentfs/intentfs/internal/objects"
	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
)

// Source is a workspace's ledger and object store.
type Source struct {
	Dir    string
	Ledger string
	Store  *objects.Store
	// Records, if set, lists the records in place of the Ledger file (a
	// clone whose records are only in git notes).
	Records func(fn func(*ledger.Record) error) error
	// Versions, if set, finds the bytes of a version neither the store
	// nor the current file has (in git's history).
	Versions func(rel, hash string) ([]byte, error)
}

// query is ledger.Query over the source's records.
func (s *Source) query(f ledger.Filter, fn func(*ledger.Record) error) error {
	if s.Records != nil {
		return s.Records(func(r *ledger.Record) error {
			if !f.Match(r) {
				return nil
			}
			return fn(r)
		})
	}
	return ledger.Query(s.Ledger, f, fn)
}

// isContent reports whether a record changed a file's content or name.
func isContent(r *ledger.Record) bool {
	switch r.Gov().Event {
	case ledger.EventCreate, ledger.EventWrite, ledger.EventTruncate, ledger.EventDelete, ledger.EventRename, ledger.EventRevert,
		ledger.EventAccept:
		return true
	}
	return false
}

func (s *Source) version(rel, hash string) (string, error) {
	if hash == "" {
		return "", nil
	}
	b, err := s.Store.Version(s.Dir, rel, hash)
	if err != nil && s.Versions != nil {
		if vb, verr := s.Versions(rel, hash); verr == nil {
			return string(vb), nil
		}
	}
	return string(b), err
}

// RecordDiff is the unified diff of one record.
func (s *Source) RecordDiff(r *ledger.Record) (string, error) {
	g := r.Gov()
	from, to := r.Path(), r.Path()
	if g.FromPath != "" {
		from = g.FromPath
	}
	pre, err := s.version(from, ledger.Str(g.PreHash))
	if err != nil {
		return "", err
	}
	post, err := s.version(to, ledger.Str(g.PostHash))
	if err != nil {
		return "", err
	}
	if g.Event == ledger.EventRename && g.PreHash == nil {
		return fmt.Sprintf("rename %s → %s (content unchanged)\n", from, to), nil
	}
	return udiff.Unified("a/"+textsafe.Escape(from), "b/"+textsafe.Escape(to), pre, post), nil
}

// FileDiff is the unified diff of one file.
type FileDiff struct {
	Path string `json:"path"`
	Diff string `json:"diff"`
}

// NetDiffs returns, for each file the records touched (in order), the diff
// from its first recorded version to its last: what the records changed
// in total.
func (s *Source) NetDiffs(recs []*ledger.Record) ([]string, error) {
	files, err := s.NetFileDiffs(recs)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Diff
	}
	return out, nil
}

// NetFileDiffs is NetDiffs with the path of each file.
func (s *Source) NetFileDiffs(recs []*ledger.Record) ([]FileDiff, error) {
	type span = span2
	spans := map[string]*span{}
	var order []string
	for _, r := range recs {
		if !isContent(r) {
			continue
		}
		g := r.Gov()
		p := r.Path()
		sp, ok := spans[p]
		if !ok {
			sp = &span{first: ledger.Str(g.PreHash)}
			spans[p] = sp
			order = append(order, p)
		}
		if g.Event == ledger.EventRename && g.FromPath != "" {
			// A move carries the source's history along; a rename over a
			// file (sed -i) starts from the file it replaced, and the
			// temporary name's own history ends.
			if prev, ok := spans[g.FromPath]; ok {
				if g.PreHash == nil {
					sp.first = prev.first
				}
				delete(spans, g.FromPath)
			}
		}
		sp.last = ledger.Str(g.PostHash)
	}
	var out []FileDiff
	for _, p := range order {
		sp, ok := spans[p]
		if !ok {
			continue
		}
		pre, err := s.version(p, sp.first)
		if err != nil {
			return nil, err
		}
		post, err := s.version(p, sp.last)
		if err != nil {
			return nil, err
		}
		if d := udiff.Unified("a/"+textsafe.Escape(p), "b/"+textsafe.Escape(p), pre, post); d != "" {
			out = append(out, FileDiff{Path: p, Diff: d})
		}
	}
	return out, nil
}

// span2 is a file's first and last recorded versions.

type span2 struct{ first, last string }

// BlameLine is one line of a file with the record that last wrote it.
type BlameLine struct {
	Line    int       `json:"line"`
	Text    string    `json:"text"`
	Record  string    `json:"record,omitempty"`
	Intent  string    `json:"intent,omitempty"`
	Time    time.Time `json:"time,omitempty"`
	Process string    `json:"process,omitempty"`
	Event   string    `json:"event,omitempty"`
	// Contributor is the Agent Trace contributor of the record: "human"
	// for a line a person accepted (intentfs accept), "ai" otherwise.
	Contributor string `json:"contributor,omitempty"`
}

// Blame attributes each line of the current file rel to the record that
// last wrote it, following renames; lines no record explains (the file
// as it was before the ledger, or edits made outside the mount) have no
// record. A version git restored keeps the owners its lines had when it
// was first written (see docs/blame.md).
func (s *Source) Blame(rel string) ([]BlameLine, error) {
	rp, err := s.newReplay()
	if err != nil {
		return nil, err
	}
	cur, err := safeio.ReadPrefix(s.Dir, rel, 1<<31-1)
	if err != nil {
		return nil, err
	}
	b := rp.run(rp.fileChain(rel, len(rp.all)))
	// Changes made behind the ledger's back belong to no record.
	b.lines = reattribute(b.lines, b.content, string(cur), b.byHunk, newOwnedLine)
	return blameLines(b.lines), nil
}

// maxRestoreDepth bounds how many restores of restores a blame follows
// back; past it a restored version's lines are its first writer's.
const maxRestoreDepth = 32

// replay is the ledger's content records, replayed per file for blame.
type replay struct {
	s *Source
	// all is every content record, oldest first; at is each one's index.
	all []*ledger.Record
	at  map[string]int
	// made caches the owned lines of the version each record produced
	// (nil: unknown), by record id.
	made  map[string][]ownedLine
	depth int
}

func (s *Source) newReplay() (*replay, error) {
	rp := &replay{s: s, at: map[string]int{}, made: map[string][]ownedLine{}}
	err := s.query(ledger.Filter{}, func(r *ledger.Record) error {
		if isContent(r) {
			rp.at[r.ID] = len(rp.all)
			rp.all = append(rp.all, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rp, nil
}

// fileChain returns the content records of rel's history among the first
// n records, newest first, following plain moves back to the names it
// had.
func (rp *replay) fileChain(rel string, n int) (chain []*ledger.Record) {
	name := rel
	for i := n - 1; i >= 0; i-- {
		r := rp.all[i]
		if r.Path() != name {
			continue
		}
		if r.Gov().Event == ledger.EventDelete {
			if len(chain) > 0 && rewrites(r, chain[len(chain)-1]) {
				continue
			}
			break // an older file of the same name is not this one
		}
		chain = append(chain, r)
		// A plain move continues the history under the old name; a rename
		// over this file (sed -i, editors) is a content change of it, whose
		// history goes on here.
		if g := r.Gov(); g.Event == ledger.EventRename && g.FromPath != "" && g.PreHash == nil {
			name = g.FromPath
		}
	}
	return chain
}

// rewrites reports whether the deletion del and the creation next of the
// same name, the record of that name that follows it, are one rewrite of
// the file: one process removed the name and wrote it anew (git's
// checkout, rebase and stash replace a file so), and the lines it kept
// are not its own.
func rewrites(del, next *ledger.Record) bool {
	dp, np := del.Gov().Process, next.Gov().Process
	return next.Gov().Event == ledger.EventCreate && dp != nil && np != nil && dp.Pid != 0 && dp.Pid == np.Pid && dp.Comm == np.Comm
}

// run replays chain (newest first) oldest first.
func (rp *replay) run(chain []*ledger.Record) *blame {
	b := &blame{rp: rp, s: rp.s, pending: map[string]*ledger.Record{}, seen: map[string][]ownedLine{}, wrote: map[string]*ledger.Record{}}
	for i := len(chain) - 1; i >= 0; i-- {
		r := chain[i]
		if i == len(chain)-1 {
			b.startAt(r)
		} else {
			b.catchUp(r)
		}
		// A creation past the start of the chain follows a deletion by
		// the same process (see rewrites).
		b.apply(r, i != len(chain)-1 && r.Gov().Event == ledger.EventCreate)
	}
	return b
}

// madeBy returns the owned lines of the version r produced, as a blame
// of its file just after r would show them, and whether they are known.
func (rp *replay) madeBy(r *ledger.Record) ([]ownedLine, bool) {
	if lines, ok := rp.made[r.ID]; ok {
		return lines, lines != nil
	}
	post := ledger.Str(r.Gov().PostHash)
	i, ok := rp.at[r.ID]
	if !ok || post == "" || rp.depth >= maxRestoreDepth {
		return nil, false
	}
	rp.made[r.ID] = nil // a cycle finds it unknown
	rp.depth++
	b := rp.run(rp.fileChain(r.Path(), i+1))
	rp.depth--
	if b.hash != post {
		return nil, false
	}
	rp.made[r.ID] = b.lines
	return b.lines, true
}

// ownedLine is a line of a file's version and the record that wrote it
// (nil: nobody's).
type ownedLine struct {
	text string
	rec  *ledger.Record
}

func newOwnedLine(text string, rec *ledger.Record) ownedLine { return ownedLine{text, rec} }

// blame replays a file's records oldest first, carrying an owner per line.
type blame struct {
	rp *replay
	s  *Source
	// lines and content are the version replayed so far, and hash its
	// hash when a record's version was read.
	lines   []ownedLine
	content string
	hash    string
	// pending holds records whose new version is gone (overwritten
	// outside the mount), by the content hash of each one-line hunk they
	// carry: their lines can still be recognised.
	pending map[string]*ledger.Record
	// seen keeps the owners of each version replayed, by content hash,
	// for a restore of it.
	seen map[string][]ownedLine
	// wrote is the last record to own each line text in the versions
	// replayed, for a rewrite that brings the line back.
	wrote map[string]*ledger.Record
}

func (b *blame) byHunk(line string) *ledger.Record { return b.pending[lineHash(line)] }

// startAt begins the replay with the version before the ledger's first
// change r, which is nobody's.
func (b *blame) startAt(r *ledger.Record) {
	g := r.Gov()
	if g.PreHash == nil || g.Event == ledger.EventRename {
		return
	}
	pre, err := b.s.version(r.Path(), *g.PreHash)
	if err != nil {
		return
	}
	b.content, b.hash = pre, *g.PreHash
	for _, l := range splitLines(pre) {
		b.lines = append(b.lines, ownedLine{text: l})
	}
	b.seen[*g.PreHash] = slices.Clone(b.lines)
}

// catchUp takes in an edit made outside the mount between the previous
// record and r, which shows as a gap between that one's post and r's pre.
func (b *blame) catchUp(r *ledger.Record) {
	g := r.Gov()
	if g.PreHash == nil {
		return
	}
	if pre, err := b.s.version(r.Path(), *g.PreHash); err == nil && pre != b.content {
		b.lines = reattribute(b.lines, b.content, pre, b.byHunk, newOwnedLine)
		b.content, b.hash = pre, *g.PreHash
		clear(b.pending)
	}
}

// apply replays r: its new lines are its own, unless git restored the
// content, when they belong to whoever wrote that version. rewrite says
// that r wrote the file anew after its process deleted it.
func (b *blame) apply(r *ledger.Record, rewrite bool) {
	g := r.Gov()
	post, err := b.s.version(r.Path(), ledger.Str(g.PostHash))
	if err != nil || g.PostHash == nil {
		b.remember(r)
		b.hash = ""
		return
	}
	from := b.rp.restoredFrom(r)
	switch {
	case g.Event == ledger.EventAccept:
		// A person took the file as it is: lines a record still
		// explains keep it, the rest are the person's.
		b.lines = reattribute(b.lines, b.content, post, func(l string) *ledger.Record {
			if by := b.byHunk(l); by != nil {
				return by
			}
			return r
		}, newOwnedLine)
		clear(b.pending)
	case g.RestoredFrom == "" && rewrite:
		// A file written anew that is no earlier version (git's rebase
		// and cherry-pick write the merge of the new base and the
		// replayed commit): a line the file had before, by a record,
		// is that record's again; the rest are r's.
		b.lines = reattribute(b.lines, b.content, post, func(l string) *ledger.Record {
			if by := b.wrote[l]; by != nil && strings.TrimSpace(l) != "" {
				return by
			}
			return r
		}, newOwnedLine)
	case g.RestoredFrom == "":
		b.lines = reattribute(b.lines, b.content, post, func(string) *ledger.Record { return r }, newOwnedLine)
	case b.seen[*g.PostHash] != nil:
		// git restored a version replayed before: its lines keep the
		// owners they had then.
		b.lines = slices.Clone(b.seen[*g.PostHash])
	case from != nil:
		// git restored a version a record made, before this file's
		// history as followed here (deleted in between: a branch
		// switch, a rebase): its lines keep the owners they had when
		// that record made it; failing that, they are that record's.
		if made, ok := b.rp.madeBy(from); ok && len(made) == len(splitLines(post)) {
			b.lines = slices.Clone(made)
		} else {
			b.lines = reattribute(b.lines, b.content, post, func(string) *ledger.Record { return from }, newOwnedLine)
		}
	default:
		// git restored content from history the ledger did not see
		// written: its new lines are nobody's ("before intentfs").
		b.lines = reattribute(b.lines, b.content, post, func(string) *ledger.Record { return nil }, newOwnedLine)
	}
	b.content, b.hash = post, *g.PostHash
	b.seen[*g.PostHash] = slices.Clone(b.lines)
	for _, l := range b.lines {
		if l.rec != nil {
			b.wrote[l.text] = l.rec
		}
	}
}

// restoredFrom is the earlier record whose version r restored, if r is
// a restore that names one.
func (rp *replay) restoredFrom(r *ledger.Record) *ledger.Record {
	id, ok := strings.CutPrefix(r.Gov().RestoredFrom, "record ")
	if !ok {
		return nil
	}
	i, ok := rp.at[id]
	if !ok || i >= rp.at[r.ID] {
		return nil // a restore names a version made before it
	}
	return rp.all[i]
}

// remember keeps r, whose new version is gone, by the hashes of its
// one-line hunks.
func (b *blame) remember(r *ledger.Record) {
	for _, f := range r.Files {
		for _, c := range f.Conversations {
			for _, rg := range c.Ranges {
				if rg.StartLine == rg.EndLine {
					b.pending[rg.ContentHash] = r
				}
			}
		}
	}
}

// blameLines turns owned lines into what Blame reports.
func blameLines(lines []ownedLine) []BlameLine {
	out := make([]BlameLine, len(lines))
	for i, l := range lines {
		b := BlameLine{Line: i + 1, Text: l.text}
		if l.rec != nil {
			g := l.rec.Gov()
			b.Record, b.Intent, b.Event = l.rec.ID, ledger.Str(g.IntentID), string(g.Event)
			if len(l.rec.Files) > 0 && len(l.rec.Files[0].Conversations) > 0 {
				b.Contributor = l.rec.Files[0].Conversations[0].Contributor.Type
			}
			b.Time, _ = time.Parse(time.RFC3339Nano, l.rec.Timestamp)
			if g.Process != nil {
				b.Process = fmt.Sprintf("%s[%d]", g.Process.Comm, g.Process.Pid)
			}
		}
		out[i] = b
	}
	return out
}

// reattribute maps owners across an edit from old to new: unchanged lines
// keep theirs, inserted lines get owner(text).
func reattribute[T any](lines []T, old, new string, owner func(string) *ledger.Record, mk func(string, *ledger.Record) T) []T {
	if old == new {
		return lines
	}
	edits := udiff.Lines(old, new)
	oldLines := splitLines(old)
	if len(lines) != len(oldLines) {
		// Unknown previous owners: start from nobody.
		lines = make([]T, len(oldLines))
		for i, l := range oldLines {
			lines[i] = mk(l, nil)
		}
	}
	var out []T
	pos := 0 // byte offset in old
	li := 0  // line index in old
	for _, e := range edits {
		for li < len(oldLines) && pos < e.Start {
			out = append(out, lines[li])
			pos += len(oldLines[li]) + 1
			li++
		}
		for li < len(oldLines) && pos < e.End {
			pos += len(oldLines[li]) + 1
			li++
		}
		for _, l := range splitLines(e.New) {
			out = append(out, mk(l, owner(l)))
		}
	}
	for ; li < len(oldLines); li++ {
		out = append(out, lines[li])
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lineHash is the content_hash of a one-line hunk.
func lineHash(line string) string {
	s := sha256.Sum256([]byte(line + "\n"))
	return "sha256:" + hex.EncodeToString(s[:])
}
