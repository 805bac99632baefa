package gitnotes

import (
	"github.com/intentfs/intentfs/ledger"
)

// chainIndex links the lines of the notes into chains. A record names the
// line before it by prev_public, the hash of that line's public form
// (ledger.PublicHash), when it has one, and by prev, the hash of its exact
// bytes, when it was written before public forms existed. A line in the
// notes is either form, so each is known by both hashes.
type chainIndex struct {
	raw, pub []string
	// next maps a hash to the lines that name it as their predecessor.
	next map[string][]int
	// known holds every hash a line of the notes has.
	known map[string]bool
}

// link is the hash a record names its predecessor by.
func link(r *ledger.Record) string {
	if g := r.Gov(); g.PrevPublic != "" {
		return g.PrevPublic
	}
	return r.Gov().Prev
}

func indexChains(set *Set) *chainIndex {
	c := &chainIndex{raw: make([]string, len(set.Lines)), pub: make([]string, len(set.Lines)),
		next: map[string][]int{}, known: map[string]bool{}}
	for i, l := range set.Lines {
		c.raw[i] = ledger.LineHash(l.Raw)
		c.pub[i], _ = ledger.PublicHash(l.Raw)
		c.known[c.raw[i]] = true
		if c.pub[i] != "" {
			c.known[c.pub[i]] = true
		}
		p := link(l.Record)
		c.next[p] = append(c.next[p], i)
	}
	return c
}

// successors returns the lines that name line i as their predecessor.
func (c *chainIndex) successors(i int) []int {
	out := c.next[c.raw[i]]
	if c.pub[i] == "" || c.pub[i] == c.raw[i] {
		return out
	}
	more := c.next[c.pub[i]]
	if len(out) == 0 {
		return more
	}
	if len(more) == 0 {
		return out
	}
	return append(append([]int(nil), out...), more...)
}

// roots returns the lines that start a chain.
func (c *chainIndex) roots() []int { return c.next[ledger.Genesis] }
