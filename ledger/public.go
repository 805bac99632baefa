package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Keep names the fields a public form keeps that it otherwise leaves
// out. The zero Keep is what git notes carry by default: what attribution
// needs (event, paths, hashes, intent, session, the process's pid, comm
// and program name) and no command line, absolute path or uid.
type Keep struct {
	// Cmdline keeps the process's arguments.
	Cmdline bool
	// Source keeps a header's absolute source directory.
	Source bool
	// Uids keeps the process's uid and gid.
	Uids bool
	// Exe keeps the program's absolute path (else only its base name).
	Exe bool
}

// Publishable fields, as a policy's notes.include names them.
const (
	IncludeCmdline = "cmdline"
	IncludeSource  = "source"
	IncludeUids    = "uids"
	IncludeExe     = "exe"
)

// KnownIncludes lists the names a policy's notes.include accepts.
func KnownIncludes() []string {
	return []string{IncludeCmdline, IncludeSource, IncludeUids, IncludeExe}
}

// KeepOf returns the Keep for the names of notes.include (unknown names
// are the policy parser's to refuse; here they keep nothing).
func KeepOf(include []string) Keep {
	var k Keep
	for _, n := range include {
		switch n {
		case IncludeCmdline:
			k.Cmdline = true
		case IncludeSource:
			k.Source = true
		case IncludeUids:
			k.Uids = true
		case IncludeExe:
			k.Exe = true
		}
	}
	return k
}

// PublicForm returns a ledger line as it may leave the machine: the
// record with the fields keep does not name left out, and without prev
// (the hash of the full line before, which would let anyone who guesses
// a left-out field confirm the guess). Its objects' keys are sorted and
// every other byte is the line's own, so the form is a function of the
// record's content alone: PublicForm of a public form with less kept is
// the public form with less kept of the original. The chain stays
// checkable: each record written since public forms exist carries
// prev_public, PublicHash of the line before it.
func PublicForm(raw []byte, keep Keep) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, errors.New("not a ledger record: not JSON")
	}
	return publicForm(raw, keep)
}

// publicForm is PublicForm of a line known to be valid JSON (one the
// writer has just encoded).
func publicForm(raw []byte, keep Keep) ([]byte, error) {
	var c canonicalizer
	return c.form(raw, keep)
}

// canonicalizer writes a JSON value with its objects' keys sorted (the
// last of duplicate keys kept, as encoding/json reads them) and the
// fields a public form leaves out dropped. It reads a valid document
// (PublicForm checks), copying strings, numbers and literals as they are.
// Written by hand, and into one arena: the writer computes a public form
// for every line, and decoding records generically would cost it several
// times their encoding. One canonicalizer can be used for line after
// line (see publicHasher), keeping its buffers.
type canonicalizer struct {
	in     []byte
	pos    int
	keep   Keep
	sawGov bool
	// arena holds the containers written; a value returned is a slice of
	// it (or of in) that nothing writes to again until the next form.
	arena []byte
	// members and parts are stacks of the objects' members and the
	// arrays' elements being read, innermost last: a container's own are
	// those above the height the stack had when it began.
	members []member
	parts   [][]byte
	// order is a stack of indexes into members, sorted per object:
	// moving indexes is cheaper than moving members.
	order []int32
}

// form returns the public form of raw, a valid JSON document, with what
// keep names kept. The form is a slice of the canonicalizer's arena (or
// of raw), valid until the next call.
func (c *canonicalizer) form(raw []byte, keep Keep) ([]byte, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("not a ledger record: not a JSON object")
	}
	c.in, c.pos, c.keep, c.sawGov = raw, 0, keep, false
	if need := 3 * len(raw); cap(c.arena) < need {
		c.arena = make([]byte, 0, need)
	}
	c.arena, c.members, c.parts, c.order = c.arena[:0], c.members[:0], c.parts[:0], c.order[:0]
	out, err := c.value(atTop)
	c.in = nil
	if err != nil {
		return nil, err
	}
	if !c.sawGov {
		return nil, errors.New("not a ledger record: no metadata." + MetadataKey)
	}
	return out, nil
}

// The largest buffers a canonicalizer keeps between lines: an unusually
// long line's are let go rather than held.
const (
	maxKeptArena = 1 << 20
	maxKeptStack = 4096
)

// publicHasher computes the PublicHash of line after line, reusing its
// buffers: the writer hashes every line it encodes. Not safe for
// concurrent use.
type publicHasher struct {
	c canonicalizer
}

// hash is publicHash of raw, a line known to be valid JSON.
func (h *publicHasher) hash(raw []byte) (string, error) {
	p, err := h.c.form(raw, Keep{})
	if err != nil {
		return "", err
	}
	sum := LineHash(p)
	if cap(h.c.arena) > maxKeptArena || cap(h.c.members) > maxKeptStack || cap(h.c.parts) > maxKeptStack || cap(h.c.order) > maxKeptStack {
		h.c = canonicalizer{}
	}
	return sum, nil
}

// Where a value is, as far as a public form cares.
const (
	atOther    = iota
	atTop      // the record
	atMetadata // metadata
	atGov      // metadata["dev.intentfs"]
	atProcess  // metadata["dev.intentfs"].process
)

// inside returns where the value of key is, in an object at where.
func inside(where int, key []byte) int {
	switch {
	case where == atTop && string(key) == "metadata":
		return atMetadata
	case where == atMetadata && string(key) == MetadataKey:
		return atGov
	case where == atGov && string(key) == "process":
		return atProcess
	}
	return atOther
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// value returns the value at pos, found at where, in canonical form.
func (c *canonicalizer) value(where int) ([]byte, error) {
	c.skipSpace()
	if c.pos >= len(c.in) {
		return nil, errors.New("not a ledger record: cut short")
	}
	switch c.in[c.pos] {
	case '{':
		return c.object(where)
	case '[':
		return c.array()
	case '"':
		return c.stringToken(), nil
	}
	start := c.pos
scalar:
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			break scalar
		}
		c.pos++
	}
	return c.in[start:c.pos:c.pos], nil
}

// stringToken returns the string token at pos, quotes included.
func (c *canonicalizer) stringToken() []byte {
	start := c.pos
	c.pos++
	for c.in[c.pos] != '"' {
		if c.in[c.pos] == '\\' {
			c.pos++
		}
		c.pos++
	}
	c.pos++
	return c.in[start:c.pos:c.pos]
}

// emit appends the parts to the arena as one value and returns it. A
// part may be an earlier value in the arena: append copies it from
// wherever it is, also when the arena moves.
func (c *canonicalizer) emit(open, close byte, parts [][]byte) []byte {
	start := len(c.arena)
	c.arena = append(c.arena, open)
	for _, p := range parts {
		c.arena = append(c.arena, p...)
	}
	c.arena = append(c.arena, close)
	return c.arena[start:len(c.arena):len(c.arena)]
}

func (c *canonicalizer) array() ([]byte, error) {
	c.pos++ // [
	base := len(c.parts)
	for i := 0; ; i++ {
		c.skipSpace()
		if c.in[c.pos] == ']' {
			c.pos++
			out := c.emit('[', ']', c.parts[base:])
			c.parts = c.parts[:base]
			return out, nil
		}
		if i > 0 {
			c.pos++ // the comma
			c.parts = append(c.parts, comma)
		}
		v, err := c.value(atOther)
		if err != nil {
			return nil, err
		}
		c.parts = append(c.parts, v)
	}
}

var comma = []byte{','}

type member struct {
	key   []byte // the key, unescaped
	token []byte // the key as written
	value []byte
}

func (c *canonicalizer) object(where int) ([]byte, error) {
	c.pos++ // {
	base := len(c.members)
	for i := 0; ; i++ {
		c.skipSpace()
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		if i > 0 {
			c.pos++ // the comma
			c.skipSpace()
		}
		tok := c.stringToken()
		key := tok[1 : len(tok)-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if err := json.Unmarshal(tok, &k); err != nil {
				return nil, fmt.Errorf("not a ledger record: key %s: %w", tok, err)
			}
			key = []byte(k)
		}
		c.skipSpace()
		c.pos++ // the colon
		v, err := c.value(inside(where, key))
		if err != nil {
			return nil, err
		}
		c.members = append(c.members, member{key: key, token: tok, value: v})
	}
	members := c.members[base:]
	obase := len(c.order)
	for i := range members {
		c.order = append(c.order, int32(i))
	}
	order := c.order[obase:]
	defer func() { c.members, c.order = c.members[:base], c.order[:obase] }()
	gov, proc := where == atGov, where == atProcess
	if gov {
		c.sawGov = true
	}
	// The last of duplicate keys is the one a decoder keeps.
	slices.SortStableFunc(order, func(a, b int32) int { return bytes.Compare(members[a].key, members[b].key) })
	// The members are written straight into the arena; their values are
	// earlier values there (or slices of the line), which append copies.
	start := len(c.arena)
	c.arena = append(c.arena, '{')
	first := true
	for i, mi := range order {
		m := members[mi]
		if i+1 < len(order) && bytes.Equal(members[order[i+1]].key, m.key) {
			continue
		}
		if gov || proc {
			key := m.key
			switch {
			case gov && string(key) == "prev", gov && string(key) == "source" && !c.keep.Source,
				proc && string(key) == "cmdline" && !c.keep.Cmdline,
				proc && (string(key) == "uid" || string(key) == "gid") && !c.keep.Uids:
				continue
			case proc && string(key) == "exe" && !c.keep.Exe:
				b, quote, err := exeBase(m.value)
				if err != nil {
					return nil, err
				}
				if quote {
					// The base name of a plain string, quoted in place.
					c.arena = appendComma(c.arena, &first)
					c.arena = append(c.arena, m.token...)
					c.arena = append(c.arena, ':', '"')
					c.arena = append(c.arena, b...)
					c.arena = append(c.arena, '"')
					continue
				}
				m.value = b
			}
		}
		c.arena = appendComma(c.arena, &first)
		c.arena = append(c.arena, m.token...)
		c.arena = append(c.arena, ':')
		c.arena = append(c.arena, m.value...)
	}
	c.arena = append(c.arena, '}')
	return c.arena[start:len(c.arena):len(c.arena)], nil
}

// comma appends the comma before a member unless it is the first.
func appendComma(arena []byte, first *bool) []byte {
	if *first {
		*first = false
		return arena
	}
	return append(arena, ',')
}

// exeBase returns the value of a process's exe as a public form keeps it:
// a string with a slash becomes its base name, encoded as encoding/json
// encodes it; anything else stays as it is. With quote, the value
// returned is a plain string's base name, to be written in quotes.
func exeBase(value []byte) (b []byte, quote bool, err error) {
	if plain, ok := plainString(value); ok {
		// Printable ASCII with nothing encoding/json escapes, and no
		// trailing slash: its base name is what follows the last slash,
		// and quoted it is what json.Marshal writes.
		i := bytes.LastIndexByte(plain, '/')
		switch {
		case i < 0:
			return value, false, nil
		case i < len(plain)-1:
			return plain[i+1:], true, nil
		}
	}
	var exe string
	if json.Unmarshal(value, &exe) == nil && strings.Contains(exe, "/") {
		b, err := json.Marshal(path.Base(exe))
		return b, false, err
	}
	return value, false, nil
}

// plainString returns the content of a JSON string token that holds only
// printable ASCII that encoding/json writes as it is (no quote,
// backslash, <, > or &).
func plainString(tok []byte) ([]byte, bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return nil, false
	}
	in := tok[1 : len(tok)-1]
	for _, b := range in {
		if b < 0x20 || b > 0x7e || b == '"' || b == '\\' || b == '<' || b == '>' || b == '&' {
			return nil, false
		}
	}
	return in, true
}

// PublicHash is the chain hash of a line's public form with nothing
// extra kept: what the next record's prev_public names. Any public form
// of the line, and the line itself, have the same PublicHash.
func PublicHash(raw []byte) (string, error) {
	if !json.Valid(raw) {
		return "", errors.New("not a ledger record: not JSON")
	}
	return publicHash(raw)
}

// publicHash is PublicHash of a line known to be valid JSON.
func publicHash(raw []byte) (string, error) {
	p, err := publicForm(raw, Keep{})
	if err != nil {
		return "", err
	}
	return LineHash(p), nil
}
