package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"unicode"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/internal/gitnotes"
	"github.com/intentfs/intentfs/internal/ledgersign"
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

// recordCounts says where the records a check counted came from, and
// which records of the notes it did not count.
type recordCounts struct {
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
	Signatures *signatureCounts `json:"signatures,omitempty"`
}

// signatureCounts is what a check with an allowed-signers file counted.
type signatureCounts struct {
	File string `json:"allowed_signers"`
	// Unsigned counts the records no valid checkpoint of an allowed
	// signer covers: not counted.
	Unsigned int `json:"unsigned_not_counted"`
	// Local is the local ledger's chain; Origins the notes' other
	// origins whose records were considered.
	Local   *gitnotes.SignedOrigin  `json:"local,omitempty"`
	Origins []gitnotes.SignedOrigin `json:"origins"`
}

// recordSink receives the records a check counts (counted) and those it
// does not count for want of a signature, with their chain (unsigned).
type recordSink struct {
	counted  func(*ledger.Record)
	unsigned func(r *ledger.Record, chain string)
}

// allRecords calls fn for every record of the local ledger and then for
// the records of the notes a check may count (gitnotes.Count): where the
// clone has a ledger of its own, it is authoritative and other origins'
// whole chains count only with withNotes; without one (a reviewer's fresh
// clone) they count unless withNotes is false. withNotes nil is the
// default.
//
// With an allowed-signers file (trust not nil), a record counts only when
// a valid checkpoint of an allowed signer covers it (ledgersign.Cover),
// in the local ledger as in the notes; the others go to sink.unsigned.
func allRecords(ctx context.Context, ws workspace, g *gitWorkspace, withNotes *bool, trust *ledgersign.Trust, sink recordSink) (recordCounts, error) {
	var n recordCounts
	fn := sink.counted
	var localLinks []ledgersign.Link
	if trust != nil {
		n.Signatures = &signatureCounts{File: trust.File, Origins: []gitnotes.SignedOrigin{}}
		// The local ledger's records wait for its checkpoints.
		fn = func(r *ledger.Record) {}
	}
	seen := map[string]bool{}
	local := gitnotes.NewLocal()
	// Hashing every ledger line is for matching the notes' lines: skipped
	// when there are none.
	hasNotes := g != nil && gitnotes.HasRef(ctx, g.repo, gitnotes.Ref)
	err := ledger.ScanRaw(ws.layout().LedgerPath(), func(file string, line int, raw []byte) error {
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
	set, err := gitnotes.Read(ctx, g.repo)
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
			sink.unsigned(l.Record, origin[i])
			continue
		}
		n.Noted++
		if sigs != nil {
			considered[origin[index[l.Record.ID]]] = true
		}
		sink.counted(l.Record)
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
func countSigned(trust *ledgersign.Trust, links []ledgersign.Link, sc *signatureCounts, sink recordSink) int {
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
			sink.unsigned(l.Record, chain)
			continue
		}
		o.Signed++
		counted++
		if !keys[by.Key] {
			keys[by.Key] = true
			o.Signers = append(o.Signers, *by)
		}
		sink.counted(l.Record)
	}
	sc.Local = o
	return counted
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
