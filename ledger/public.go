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
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("not a ledger record: not a JSON object")
	}
	c := canonicalizer{in: raw, keep: keep, arena: make([]byte, 0, 3*len(raw))}
	out, err := c.value(atTop)
	if err != nil {
		return nil, err
	}
	if !c.sawGov {
		return nil, errors.New("not a ledger record: no metadata." + MetadataKey)
	}
	return out, nil
}

// canonicalizer writes a JSON value with its objects' keys sorted (the
// last of duplicate keys kept, as encoding/json reads them) and the
// fields a public form leaves out dropped. It reads a valid document
// (PublicForm checks), copying strings, numbers and literals as they are.
// Written by hand, and into one arena: the writer computes a public form
// for every line, and decoding records generically would cost it several
// times their encoding.
type canonicalizer struct {
	in     []byte
	pos    int
	keep   Keep
	sawGov bool
	// arena holds the containers written; a value returned is a slice of
	// it (or of in) that nothing writes to again.
	arena []byte
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
func inside(where int, key string) int {
	switch {
	case where == atTop && key == "metadata":
		return atMetadata
	case where == atMetadata && key == MetadataKey:
		return atGov
	case where == atGov && key == "process":
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
	for c.pos < len(c.in) && !strings.ContainsRune(",]} \t\n\r", rune(c.in[c.pos])) {
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

// emit appends the parts to the arena as one value and returns it.
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
	var parts [][]byte
	for i := 0; ; i++ {
		c.skipSpace()
		if c.in[c.pos] == ']' {
			c.pos++
			return c.emit('[', ']', parts), nil
		}
		if i > 0 {
			c.pos++ // the comma
			parts = append(parts, comma)
		}
		v, err := c.value(atOther)
		if err != nil {
			return nil, err
		}
		parts = append(parts, v)
	}
}

var comma, colon = []byte{','}, []byte{':'}

type member struct {
	key   []byte // the key, unescaped
	token []byte // the key as written
	value []byte
}

func (c *canonicalizer) object(where int) ([]byte, error) {
	c.pos++ // {
	members := make([]member, 0, 16)
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
		v, err := c.value(inside(where, string(key)))
		if err != nil {
			return nil, err
		}
		members = append(members, member{key: key, token: tok, value: v})
	}
	gov, proc := where == atGov, where == atProcess
	if gov {
		c.sawGov = true
	}
	// The last of duplicate keys is the one a decoder keeps.
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	parts := make([][]byte, 0, 4*len(members))
	for i, m := range members {
		if i+1 < len(members) && bytes.Equal(members[i+1].key, m.key) {
			continue
		}
		switch key := string(m.key); {
		case gov && key == "prev", gov && key == "source" && !c.keep.Source,
			proc && key == "cmdline" && !c.keep.Cmdline, proc && (key == "uid" || key == "gid") && !c.keep.Uids:
			continue
		case proc && key == "exe" && !c.keep.Exe:
			var exe string
			if json.Unmarshal(m.value, &exe) == nil && strings.Contains(exe, "/") {
				b, err := json.Marshal(path.Base(exe))
				if err != nil {
					return nil, err
				}
				m.value = b
			}
		}
		if len(parts) > 0 {
			parts = append(parts, comma)
		}
		parts = append(parts, m.token, colon, m.value)
	}
	return c.emit('{', '}', parts), nil
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
