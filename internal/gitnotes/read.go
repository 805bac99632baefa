// Package gitnotes carries the ledger with the repository: the records of
// a workspace are attached to the commits they produced as git notes under
// Ref, one Agent Trace JSON line per record, each line the exact bytes of
// its ledger line so the hash chain can be checked anywhere. Notes move
// with git push and git fetch, survive amend and rebase (notes.rewriteRef),
// and notes of several clones merge line by line (cat_sort_uniq), which is
// a merge by record id because a record's line is the same bytes wherever
// it is.
package gitnotes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/ledger"
)

// Ref is the notes ref intentfs writes.
const Ref = "refs/notes/intentfs"

// MaxNoteBytes bounds one note; a note larger than this is reported, not
// read.
const MaxNoteBytes = 256 << 20

// Line is one record found in the notes.
type Line struct {
	Raw    []byte
	Record *ledger.Record
	// Commit is the commit whose note holds the line.
	Commit string
}

// Set is every record of the notes, each once.
type Set struct {
	Lines []Line
	// Conflicts are lines whose record id is already in Lines with other
	// bytes: one of the two was changed.
	Conflicts []Line
	// Bad are lines that are not records, as "commit: reason".
	Bad []string
	// Skipped are the notes left out by a cap (see Limits), as
	// "commit: reason"; they are in Bad too.
	Skipped []string
	// Notes is the number of commits with a note.
	Notes int
	ids   map[string]int
}

// Has reports whether a record id is in the set.
func (s *Set) Has(id string) bool { _, ok := s.ids[id]; return ok }

// add adds one line, keeping the first line of each record id.
func (s *Set) add(commit string, raw []byte) {
	raw = bytes.TrimRight(raw, "\r")
	if len(bytes.TrimSpace(raw)) == 0 {
		return
	}
	var r ledger.Record
	if err := json.Unmarshal(raw, &r); err != nil || r.ID == "" {
		s.Bad = append(s.Bad, fmt.Sprintf("%s: a line that is not a ledger record", commit))
		return
	}
	l := Line{Raw: append([]byte(nil), raw...), Record: &r, Commit: commit}
	if i, ok := s.ids[r.ID]; ok {
		if !sameRecord(s.Lines[i], l) {
			s.Conflicts = append(s.Conflicts, l)
		}
		return
	}
	s.ids[r.ID] = len(s.Lines)
	s.Lines = append(s.Lines, l)
}

// sameRecord reports whether two lines of one record id say the same: the
// same bytes, or, for a record with a public form, the same public form
// (one note may carry more of it than another).
func sameRecord(a, b Line) bool {
	if bytes.Equal(a.Raw, b.Raw) {
		return true
	}
	if a.Record.Gov().PrevPublic == "" || b.Record.Gov().PrevPublic == "" {
		return false
	}
	pa, errA := ledger.PublicHash(a.Raw)
	pb, errB := ledger.PublicHash(b.Raw)
	return errA == nil && errB == nil && pa == pb
}

// Read returns every record of the notes under Ref (an empty set when
// there are none), within DefaultLimits.
func Read(ctx context.Context, repo *gitexec.Repo) (*Set, error) {
	return ReadWithin(ctx, repo, DefaultLimits())
}

// ReadWithin is Read within lim: a note over a cap is not decoded, and
// is in Bad with the cap that stopped it.
func ReadWithin(ctx context.Context, repo *gitexec.Repo, lim Limits) (*Set, error) {
	set := &Set{ids: map[string]int{}}
	err := eachNote(ctx, repo, lim, func(commit string, data []byte) {
		set.Notes++
		for raw := range bytes.SplitSeq(data, []byte{'\n'}) {
			set.add(commit, raw)
		}
	}, func(commit, why string) {
		set.Bad = append(set.Bad, commit+": "+why)
		set.Skipped = append(set.Skipped, commit+": "+why)
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

// eachNote calls fn with the bytes of every note within lim, one note in
// memory at a time, and skipped with the commit and the reason of each
// note it leaves out.
func eachNote(ctx context.Context, repo *gitexec.Repo, lim Limits, fn func(commit string, data []byte), skipped func(commit, why string)) error {
	notes, err := List(ctx, repo)
	if err != nil || len(notes) == 0 {
		return err
	}
	blobs, err := repo.Blobs(ctx)
	if err != nil {
		return err
	}
	defer blobs.Close()
	b := &budget{lim: lim}
	for _, n := range notes {
		data, err := blobs.Read(n.Blob, min(MaxNoteBytes, lim.Bytes-b.bytes))
		switch {
		case errors.Is(err, gitexec.ErrTooLarge):
			skipped(n.Commit, fmt.Sprintf("skipped: %v: the notes read may take %d bytes in all (the cap; raise it with %s=N)", err, lim.Bytes, EnvMaxBytes))
			continue
		case err != nil:
			skipped(n.Commit, err.Error())
			continue
		}
		if why := b.admitRecords(int64(len(data)), lineCount(data)); why != "" {
			skipped(n.Commit, why)
			continue
		}
		fn(n.Commit, data)
	}
	return nil
}

// Note names the blob holding a commit's note.
type Note struct{ Blob, Commit string }

// List lists the notes under Ref.
func List(ctx context.Context, repo *gitexec.Repo) ([]Note, error) {
	if !HasRef(ctx, repo, Ref) {
		return nil, nil
	}
	out, err := repo.Output(ctx, "notes", "--ref="+Ref, "list")
	if err != nil {
		return nil, fmt.Errorf("listing notes: %w", err)
	}
	var notes []Note
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && gitexec.ValidOID(f[0]) && gitexec.ValidOID(f[1]) {
			notes = append(notes, Note{Blob: f[0], Commit: f[1]})
		}
	}
	return notes, nil
}

// HasRef reports whether a ref exists.
func HasRef(ctx context.Context, repo *gitexec.Repo, ref string) bool {
	_, err := repo.Output(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	return err == nil
}

// UnreadableError is notes under Ref that git cannot read (whoever can
// write the ref, the agent in a mount included, can point it at a
// broken tree). Its text names the ref and the way out.
type UnreadableError struct{ Err error }

// Unreadable wraps an error of Read.
func Unreadable(err error) *UnreadableError { return &UnreadableError{Err: err} }

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("the notes under %s cannot be read (%s): %s", Ref, textsafe.Escape(e.Err.Error()), rebuildHint)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// Notice says the same for a check that goes on without the notes.
func (e *UnreadableError) Notice() string {
	return fmt.Sprintf("the notes under %s cannot be read (%s): they are not counted; %s", Ref, textsafe.Escape(e.Err.Error()), rebuildHint)
}

const rebuildHint = "`git update-ref -d " + Ref + "` and `intentfs notes sync` rebuild them"

// lineCount is the number of lines in data, the last one ended or not.
func lineCount(data []byte) int {
	n := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}
