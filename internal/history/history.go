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
	return udiff.Unified("a/"+from, "b/"+to, pre, post), nil
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
		if d := udiff.Unified("a/"+p, "b/"+p, pre, post); d != "" {
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
// record.
func (s *Source) Blame(rel string) ([]BlameLine, error) {
	// The records of this file's history, newest first, following renames.
	var chain []*ledger.Record
	var all []*ledger.Record
	err := s.query(ledger.Filter{}, func(r *ledger.Record) error {
		if isContent(r) {
			all = append(all, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	byID := map[string]*ledger.Record{}
	for _, r := range all {
		byID[r.ID] = r
	}
	name := rel
	for i := len(all) - 1; i >= 0; i-- {
		r := all[i]
		if r.Path() != name {
			continue
		}
		if r.Gov().Event == ledger.EventDelete {
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
	cur, err := safeio.ReadPrefix(s.Dir, rel, 1<<31-1)
	if err != nil {
		return nil, err
	}
	// Replay oldest first, carrying an owner per line.
	type owned struct {
		text string
		rec  *ledger.Record
	}
	var lines []owned
	content := ""
	// Records whose new version is gone (overwritten outside the mount):
	// their lines can still be recognised by the content hash of each
	// changed hunk the record carries.
	pending := map[string]*ledger.Record{}
	// seen keeps the owners of each version replayed, by content hash,
	// for a restore of it.
	seen := map[string][]owned{}
	byHunk := func(line string) *ledger.Record { return pending[lineHash(line)] }
	for i := len(chain) - 1; i >= 0; i-- {
		r := chain[i]
		g := r.Gov()
		if i == len(chain)-1 && g.PreHash != nil && g.Event != ledger.EventRename {
			// The version before the ledger's first change is nobody's.
			if pre, err := s.version(r.Path(), *g.PreHash); err == nil {
				content = pre
				for _, l := range splitLines(pre) {
					lines = append(lines, owned{text: l})
				}
				seen[*g.PreHash] = slices.Clone(lines)
			}
		}
		// An edit made outside the mount between two records shows as a
		// gap between one record's post and the next one's pre.
		if g.PreHash != nil && i != len(chain)-1 {
			if pre, err := s.version(r.Path(), *g.PreHash); err == nil && pre != content {
				lines = reattribute(lines, content, pre, byHunk, func(t string, rec *ledger.Record) owned { return owned{t, rec} })
				content = pre
				clear(pending)
			}
		}
		post, err := s.version(r.Path(), ledger.Str(g.PostHash))
		if err != nil || g.PostHash == nil {
			for _, f := range r.Files {
				for _, c := range f.Conversations {
					for _, rg := range c.Ranges {
						if rg.StartLine == rg.EndLine {
							pending[rg.ContentHash] = r
						}
					}
				}
			}
			continue
		}
		switch {
		case g.Event == ledger.EventAccept:
			// A person took the file as it is: lines a record still
			// explains keep it, the rest are the person's.
			lines = reattribute(lines, content, post, func(l string) *ledger.Record {
				if by := byHunk(l); by != nil {
					return by
				}
				return r
			}, func(t string, rec *ledger.Record) owned { return owned{t, rec} })
			clear(pending)
		case g.RestoredFrom == "":
			lines = reattribute(lines, content, post, func(string) *ledger.Record { return r }, func(t string, rec *ledger.Record) owned { return owned{t, rec} })
		case seen[*g.PostHash] != nil:
			// git restored a version replayed before: its lines keep the
			// owners they had then.
			lines = slices.Clone(seen[*g.PostHash])
		case byID[strings.TrimPrefix(g.RestoredFrom, "record ")] != nil:
			// git restored a version a record made, before this file's
			// history as followed here (deleted in between): its lines
			// are that record's.
			from := byID[strings.TrimPrefix(g.RestoredFrom, "record ")]
			lines = reattribute(lines, content, post, func(string) *ledger.Record { return from }, func(t string, rec *ledger.Record) owned { return owned{t, rec} })
		default:
			// git restored content from history the ledger did not see
			// written: its new lines are nobody's ("before intentfs").
			lines = reattribute(lines, content, post, func(string) *ledger.Record { return nil }, func(t string, rec *ledger.Record) owned { return owned{t, rec} })
		}
		content = post
		seen[*g.PostHash] = slices.Clone(lines)
	}
	// Changes made behind the ledger's back belong to no record.
	lines = reattribute(lines, content, string(cur), byHunk, func(t string, rec *ledger.Record) owned { return owned{t, rec} })
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
	return out, nil
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
