package gitnotes

import (
	"github.com/intentfs/intentfs/ledger"
)

// Local is what a clone's own ledger tells about the notes: which lines
// it holds and which chains are its own. Notes are written by whoever
// can write refs/notes/intentfs, the agent included, so where a local
// ledger exists it, not the notes, says what the local chain holds.
type Local struct {
	// Lines holds ledger.LineHash of every line of the local ledger, and
	// ledger.PublicHash of each: the notes carry a line in its public
	// form, or (written before public forms existed) as it is.
	Lines map[string]bool
	// Chains holds the chain id of every header of the local ledger.
	Chains map[string]bool
	// last is the newest line added: no prev_public names its public
	// hash yet.
	last []byte
}

// NewLocal returns an empty Local, to fill with Add.
func NewLocal() *Local { return &Local{Lines: map[string]bool{}, Chains: map[string]bool{}} }

// Add notes one line of the local ledger and its record.
func (l *Local) Add(raw []byte, r *ledger.Record) {
	l.Lines[ledger.LineHash(raw)] = true
	// The public hash of each line is in the next line's prev_public:
	// the ledger's own chain says it, and no line is decoded again.
	if p := r.Gov().PrevPublic; p != "" && p != ledger.Genesis {
		l.Lines[p] = true
	}
	l.last = append(l.last[:0], raw...)
	if g := r.Gov(); g.Event == ledger.EventHeader && g.Chain != "" {
		l.Chains[g.Chain] = true
	}
}

// Counted sorts the records of the notes by what a check may count.
type Counted struct {
	// Own are lines of the local ledger itself (byte for byte).
	Own []Line
	// Others are records of other origins' chains that are whole:
	// reached from a header, with no fork and no record changed.
	Others []Line
	// Ignored are the records counted in neither: in no whole chain,
	// or claiming a local chain whose ledger does not hold them.
	Ignored []Line
}

// Count sorts set's records for a check. local is the clone's own
// ledger, nil when it has none (a reviewer's fresh clone): then every
// whole chain is another origin's.
//
// A record no whole chain holds never counts: anyone who can write the
// notes can add a line, and only a chain from a header is evidence that
// the line came from a ledger. A whole chain can be forged too, which is
// why the caller counts Others only when asked to where a local ledger
// exists.
func Count(set *Set, local *Local) *Counted {
	if local != nil && len(local.last) > 0 {
		if h, err := ledger.PublicHash(local.last); err == nil {
			local.Lines[h] = true
		}
	}
	whole := wholeChains(set)
	c := &Counted{}
	for i, l := range set.Lines {
		switch chain, ok := whole[i]; {
		case local != nil && local.ownLine(l):
			c.Own = append(c.Own, l)
		case !ok, local != nil && local.Chains[chain]:
			c.Ignored = append(c.Ignored, l)
		default:
			c.Others = append(c.Others, l)
		}
	}
	return c
}

// wholeChains returns, for each line of set in a whole chain, the chain's
// id. A chain is whole when it starts at a header record (prev is
// ledger.Genesis) whose chain id no other header claims, and no record of
// it has two successors (a fork) or a record id seen with other bytes
// elsewhere in the notes (a changed record).
func wholeChains(set *Set) map[int]string {
	ix := indexChains(set)
	changed := map[string]bool{}
	for _, c := range set.Conflicts {
		changed[c.Record.ID] = true
	}
	headers := map[string]int{}
	for _, root := range ix.roots() {
		headers[set.Lines[root].Record.Gov().Chain]++
	}
	whole := map[int]string{}
	for _, root := range ix.roots() {
		g := set.Lines[root].Record.Gov()
		if g.Event != ledger.EventHeader || g.Chain == "" || headers[g.Chain] != 1 {
			continue
		}
		var members []int
		ok := true
		seen := map[int]bool{}
		for i := root; ok; {
			seen[i] = true
			members = append(members, i)
			if changed[set.Lines[i].Record.ID] {
				ok = false
			}
			succ := ix.successors(i)
			if len(succ) > 1 {
				ok = false
			}
			if len(succ) == 0 || seen[succ[0]] {
				break
			}
			i = succ[0]
		}
		if !ok {
			continue
		}
		for _, i := range members {
			whole[i] = g.Chain
		}
	}
	return whole
}

// ownLine reports whether a note's line is one of the local ledger's: by
// its exact bytes (a line from before public forms, or one in the default
// public form, which is its own public form), else by its public hash.
func (l *Local) ownLine(n Line) bool {
	if l.Lines[ledger.LineHash(n.Raw)] {
		return true
	}
	if n.Record.Gov().PrevPublic == "" {
		return false
	}
	h, err := ledger.PublicHash(n.Raw)
	return err == nil && l.Lines[h]
}
