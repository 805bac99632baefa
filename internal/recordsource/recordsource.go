// Package recordsource gathers the records a command counts: the local
// ledger and the git notes, whole chains only (the local ledger is
// authoritative where there is one), and, with an allowed-signers file,
// only the records a valid checkpoint of an allowed signer covers. It
// also reads the notes' records for the history commands on a clone with
// no ledger of its own.
package recordsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitnotes"
	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/ledgersign"
	"github.com/intentfs/intentfs/ledger"
)

// HasLedger reports whether a source has a ledger of its own at
// ledgerPath (else its records are only in the notes: a fresh clone).
func HasLedger(ledgerPath string) bool {
	files, err := ledger.Files(ledgerPath)
	return err == nil && len(files) > 0
}

// Counts says where the records a check counted came from, and
// which records of the notes it did not count.
type Counts struct {
	Local int `json:"local"`
	Noted int `json:"from_notes"`
	// Ignored are note records in no whole chain (or claiming this
	// clone's own chain without being in its ledger): never counted.
	Ignored int `json:"notes_ignored"`
	// LeftOut are other origins' note records not counted because the
	// clone has a ledger of its own and --with-notes was not given.
	LeftOut int `json:"notes_left_out"`
	// HasLedger is whether the clone has a ledger of its own.
	HasLedger bool `json:"local_ledger"`
	// Unreadable is why the notes could not be read, when they did not
	// need to be (no other origin's record would count).
	Unreadable string `json:"notes_unreadable,omitempty"`
	// Skipped are the notes a cap on what is read left out, each
	// "commit: why" (their records do not count).
	Skipped []string `json:"notes_skipped,omitempty"`
	// Signatures says what signatures covered, when an allowed-signers
	// file was given (nil: signatures were not checked).
	Signatures *SignatureCounts `json:"signatures,omitempty"`
}

// SignatureCounts is what a check with an allowed-signers file counted.
type SignatureCounts struct {
	File string `json:"allowed_signers"`
	// Unsigned counts the records no valid checkpoint of an allowed
	// signer covers: not counted.
	Unsigned int `json:"unsigned_not_counted"`
	// Local is the local ledger's chain; Origins the notes' other
	// origins whose records were considered.
	Local   *gitnotes.SignedOrigin  `json:"local,omitempty"`
	Origins []gitnotes.SignedOrigin `json:"origins"`
}

// Sink receives the records a check counts (Counted) and those it
// does not count for want of a signature, with their chain (Unsigned).
type Sink struct {
	Counted  func(*ledger.Record)
	Unsigned func(r *ledger.Record, chain string)
}

// All calls sink.Counted for every record of the local ledger at
// ledgerPath and then for
// the records of the notes a check may count (gitnotes.Count): where the
// clone has a ledger of its own, it is authoritative and other origins'
// whole chains count only with withNotes; without one (a reviewer's fresh
// clone) they count unless withNotes is false. withNotes nil is the
// default.
//
// With an allowed-signers file (trust not nil), a record counts only when
// a valid checkpoint of an allowed signer covers it (ledgersign.Cover),
// in the local ledger as in the notes; the others go to sink.Unsigned.
// repo nil is a source outside a git work tree: no notes.
func All(ctx context.Context, ledgerPath string, repo *gitexec.Repo, withNotes *bool, trust *ledgersign.Trust, sink Sink) (Counts, error) {
	var n Counts
	fn := sink.Counted
	var localLinks []ledgersign.Link
	if trust != nil {
		n.Signatures = &SignatureCounts{File: trust.File, Origins: []gitnotes.SignedOrigin{}}
		// The local ledger's records wait for its checkpoints.
		fn = func(r *ledger.Record) {}
	}
	seen := map[string]bool{}
	local := gitnotes.NewLocal()
	// Hashing every ledger line is for matching the notes' lines: skipped
	// when there are none.
	hasNotes := repo != nil && gitnotes.HasRef(ctx, repo, gitnotes.Ref)
	err := ledger.ScanRaw(ledgerPath, func(file string, line int, raw []byte) error {
		if len(raw) == 0 {
			return nil
		}
		var r ledger.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%s:%d: not a ledger record: %w", file, line, err)
		}
		seen[r.ID] = true
		n.Local++
		if hasNotes {
			local.Add(raw, &r)
		}
		if trust != nil {
			localLinks = append(localLinks, ledgersign.Link{Hash: ledger.LineHash(raw), Record: &r})
		}
		fn(&r)
		return nil
	})
	if trust != nil && len(localLinks) > 0 {
		n.Local = countSigned(trust, localLinks, n.Signatures, sink)
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		local = nil
	case err != nil:
		return n, err
	}
	n.HasLedger = local != nil
	if !hasNotes {
		return n, nil
	}
	others := local == nil
	if withNotes != nil {
		others = *withNotes
	}
	set, err := gitnotes.Read(ctx, repo)
	if err != nil {
		// Where no other origin's record counts, the notes could only
		// confirm lines the local ledger holds: unreadable notes (the
		// agent can write the ref) are a notice, not a failed check.
		u := gitnotes.Unreadable(err)
		if !others {
			n.Unreadable = u.Notice()
			return n, nil
		}
		return n, u
	}
	n.Skipped = set.Skipped
	counted := gitnotes.Count(set, local)
	n.Ignored = len(counted.Ignored)
	if !others {
		n.LeftOut = len(counted.Others)
		return n, nil
	}
	var sigs *gitnotes.Signatures
	var origin map[int]string
	if trust != nil {
		sigs = gitnotes.VerifySignatures(set, trust)
		origin = gitnotes.OriginOf(set)
	}
	index := map[string]int{}
	for i, l := range set.Lines {
		index[l.Record.ID] = i
	}
	considered := map[string]bool{}
	for _, l := range counted.Others {
		if seen[l.Record.ID] {
			continue
		}
		if i := index[l.Record.ID]; sigs != nil && !sigs.Signed(i) {
			n.Signatures.Unsigned++
			considered[origin[i]] = true
			sink.Unsigned(l.Record, origin[i])
			continue
		}
		n.Noted++
		if sigs != nil {
			considered[origin[index[l.Record.ID]]] = true
		}
		sink.Counted(l.Record)
	}
	if sigs != nil {
		for _, o := range sigs.Origins {
			if considered[o.Chain] {
				n.Signatures.Origins = append(n.Signatures.Origins, o)
			}
		}
	}
	return n, nil
}

// countSigned passes the local ledger's records to sink, as counted when
// a valid checkpoint covers them, else as unsigned, and returns how many
// count.
func countSigned(trust *ledgersign.Trust, links []ledgersign.Link, sc *SignatureCounts, sink Sink) int {
	cov := trust.Cover(links)
	chain := ""
	o := &gitnotes.SignedOrigin{Records: len(links), Checkpoints: cov.Checkpoints, Valid: cov.Valid, Signers: []ledgersign.Signature{}, Invalid: cov.Invalid}
	keys := map[string]bool{}
	counted := 0
	for i, l := range links {
		if g := l.Record.Gov(); g.Event == ledger.EventHeader && g.Chain != "" {
			chain = g.Chain
			if o.Chain == "" {
				o.Chain, o.Source = g.Chain, g.Source
			}
		}
		by := cov.By[i]
		if by == nil {
			sc.Unsigned++
			sink.Unsigned(l.Record, chain)
			continue
		}
		o.Signed++
		counted++
		if !keys[by.Key] {
			keys[by.Key] = true
			o.Signers = append(o.Signers, *by)
		}
		sink.Counted(l.Record)
	}
	sc.Local = o
	return counted
}

// Noted returns the records of the notes in time order, for the
// commands that show history on a clone without a ledger of its own.
func Noted(ctx context.Context, repo *gitexec.Repo) ([]*ledger.Record, error) {
	set, err := gitnotes.Read(ctx, repo)
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

// QueryNotes is ledger.Query over the notes.
func QueryNotes(ctx context.Context, repo *gitexec.Repo, f ledger.Filter, fn func(*ledger.Record) error) error {
	recs, err := Noted(ctx, repo)
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

// FromNotes makes s read the notes' records, and find the versions they
// name in git (the work tree's files at prefix below its top). The
// finder's git process ends when ctx does, or the command exits.
func FromNotes(ctx context.Context, repo *gitexec.Repo, prefix string, s *history.Source) *history.Source {
	s.Records = func(fn func(*ledger.Record) error) error { return QueryNotes(ctx, repo, ledger.Filter{}, fn) }
	if v, err := repo.NewVersions(ctx, prefix); err == nil {
		s.Versions = func(rel, hash string) ([]byte, error) { return v.Find(ctx, rel, hash) }
	}
	return s
}
