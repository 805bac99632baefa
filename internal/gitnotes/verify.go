package gitnotes

import (
	"fmt"
	"slices"
	"sort"

	"github.com/intentfs/intentfs/ledger"
)

// Origin is one ledger whose records are in the notes: one workspace on
// one machine, named by the chain id of its header record.
type Origin struct {
	Chain   string `json:"chain"`
	Source  string `json:"source"`
	Records int    `json:"records"`
	First   string `json:"first"`
	Last    string `json:"last"`
}

// ChainReport is the result of VerifyChains.
type ChainReport struct {
	Notes    int      `json:"notes"`
	Records  int      `json:"records"`
	Origins  []Origin `json:"origins"`
	Problems []string `json:"problems"`
}

// OK reports whether every origin's chain held.
func (r *ChainReport) OK() bool { return len(r.Problems) == 0 }

// maxChainProblems keeps a report on badly broken notes readable.
const maxChainProblems = 1000

func (r *ChainReport) problem(format string, args ...any) {
	if len(r.Problems) < maxChainProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// VerifyChains checks the notes' records origin by origin. A record does
// not name its origin; its prev field does: it is the hash of the line
// before it in its ledger, so the records of one ledger form a chain from
// a header (whose prev is ledger.Genesis and which carries the chain id
// and source) to its newest noted record. Each origin's chain must be
// whole: every record reachable from a header, no record missing between
// two others (a gap), no two records claiming the same predecessor (a
// fork: one was forged or changed), and no record id with two different
// lines. The newest records of a ledger not yet synced are not a gap:
// sync attaches a prefix of each chain.
func VerifyChains(set *Set) *ChainReport {
	rep := &ChainReport{Notes: set.Notes, Records: len(set.Lines), Problems: []string{}}
	for _, b := range set.Bad {
		rep.problem("%s", b)
	}
	for _, c := range set.Conflicts {
		rep.problem("record %s appears with different content in the notes of %s and another commit: one was changed", c.Record.ID, c.Commit)
	}
	ix := indexChains(set)
	reached := make([]bool, len(set.Lines))
	roots := slices.Clone(ix.roots())
	sort.Slice(roots, func(a, b int) bool {
		return set.Lines[roots[a]].Record.Timestamp < set.Lines[roots[b]].Record.Timestamp
	})
	for _, root := range roots {
		head := set.Lines[root].Record
		g := head.Gov()
		if g.Event != ledger.EventHeader {
			rep.problem("record %s starts a chain but is not a header record", head.ID)
		}
		o := Origin{Chain: g.Chain, Source: g.Source, First: head.Timestamp}
		for i := root; ; {
			reached[i] = true
			o.Records++
			o.Last = set.Lines[i].Record.Timestamp
			succ := ix.successors(i)
			if len(succ) > 1 {
				ids := ""
				for _, s := range succ {
					ids += " " + set.Lines[s].Record.ID
				}
				rep.problem("chain %s forks after record %s: records%s all claim to follow it; one was forged or changed", o.Chain, set.Lines[i].Record.ID, ids)
			}
			if len(succ) == 0 || reached[succ[0]] {
				break
			}
			i = succ[0]
		}
		rep.Origins = append(rep.Origins, o)
	}
	for i, l := range set.Lines {
		if reached[i] {
			continue
		}
		prev := link(l.Record)
		if !ix.known[prev] && prev != ledger.Genesis {
			rep.problem("record %s (note of %s) follows a line that is in no note: a record before it was removed or changed", l.Record.ID, short(l.Commit))
		}
	}
	return rep
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
