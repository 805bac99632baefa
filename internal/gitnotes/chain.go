package gitnotes

import (
	"bytes"

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
		c.known[c.raw[i]] = true
		p := link(l.Record)
		c.next[p] = append(c.next[p], i)
	}
	// A line in the public form the notes carry by default is its own
	// public form; any other (a ledger line from before public forms, one
	// carrying more than the default) has its public form computed, which
	// costs a decoding of the record. Taking a line for a public form when
	// it is not one can only leave records that name its public hash
	// unlinked: the chain then breaks, it never gains a record.
	for i, l := range set.Lines {
		if looksPublic(l.Raw) {
			c.pub[i] = c.raw[i]
			continue
		}
		if h, err := ledger.PublicHash(l.Raw); err == nil {
			c.pub[i] = h
			c.known[h] = true
		}
	}
	return c
}

// looksPublic reports whether a line has the shape of a default public
// form: sorted keys (it starts with "files", as a ledger line, which
// starts with "version", does not) and none of the fields a public form
// leaves out. A field name inside a text only makes it say no.
func looksPublic(raw []byte) bool {
	if !bytes.HasPrefix(raw, []byte(`{"files":`)) {
		return false
	}
	for _, f := range [][]byte{[]byte(`"prev":`), []byte(`"cmdline":`), []byte(`"uid":`), []byte(`"gid":`), []byte(`"source":`), []byte(`"exe":"/`)} {
		if bytes.Contains(raw, f) {
			return false
		}
	}
	return true
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
