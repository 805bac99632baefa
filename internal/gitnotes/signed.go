package gitnotes

import (
	"sort"

	"github.com/intentfs/intentfs/internal/ledgersign"
)

// SignedOrigin is what the signatures of one origin's chain cover.
type SignedOrigin struct {
	Chain   string `json:"chain"`
	Source  string `json:"source"`
	Records int    `json:"records"`
	// Signed is how many of its records a valid checkpoint covers.
	Signed int `json:"signed"`
	// Checkpoints counts its checkpoint records; Valid those an allowed
	// signer signed.
	Checkpoints int `json:"checkpoints"`
	Valid       int `json:"valid_checkpoints"`
	// Signers are the principals and keys of the valid checkpoints.
	Signers []ledgersign.Signature `json:"signers"`
	// Invalid says why checkpoints did not count.
	Invalid []string `json:"invalid,omitempty"`
}

// Signatures is which records of the notes a valid signature covers.
type Signatures struct {
	// Covered holds the index in the set's Lines of every covered line.
	Covered map[int]*ledgersign.Signature `json:"-"`
	Origins []SignedOrigin                `json:"origins"`
}

// Signed reports whether the set's line i is covered.
func (s *Signatures) Signed(i int) bool { return s.Covered[i] != nil }

// OriginOf returns the chain id of each line of set in a whole chain.
func OriginOf(set *Set) map[int]string { return wholeChains(set) }

// VerifySignatures decides, chain by chain, which records of the notes a
// checkpoint signed by one of trust's signers covers (ledgersign.Cover).
// Only whole chains are read (see Count): a line in no whole chain is
// covered by nothing.
func VerifySignatures(set *Set, trust *ledgersign.Trust) *Signatures {
	out := &Signatures{Covered: map[int]*ledgersign.Signature{}, Origins: []SignedOrigin{}}
	whole := wholeChains(set)
	ix := indexChains(set)
	roots := append([]int(nil), ix.roots()...)
	sort.Slice(roots, func(a, b int) bool {
		return set.Lines[roots[a]].Record.Timestamp < set.Lines[roots[b]].Record.Timestamp
	})
	for _, root := range roots {
		if _, ok := whole[root]; !ok {
			continue
		}
		var order []int
		seen := map[int]bool{}
		for i := root; !seen[i]; {
			seen[i] = true
			order = append(order, i)
			succ := ix.successors(i)
			if len(succ) == 0 {
				break
			}
			i = succ[0]
		}
		links := make([]ledgersign.Link, len(order))
		for k, i := range order {
			links[k] = ledgersign.Link{Hash: ix.raw[i], PublicHash: ix.pub[i], Record: set.Lines[i].Record}
		}
		cov := trust.Cover(links)
		g := set.Lines[root].Record.Gov()
		o := SignedOrigin{Chain: g.Chain, Source: g.Source, Records: len(order), Checkpoints: cov.Checkpoints, Valid: cov.Valid,
			Signers: []ledgersign.Signature{}, Invalid: cov.Invalid}
		keys := map[string]bool{}
		for k, i := range order {
			if by := cov.By[k]; by != nil {
				out.Covered[i] = by
				o.Signed++
				if !keys[by.Key] {
					keys[by.Key] = true
					o.Signers = append(o.Signers, *by)
				}
			}
		}
		out.Origins = append(out.Origins, o)
	}
	return out
}
