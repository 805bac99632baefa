package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
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
// a left-out field confirm the guess). Its keys are sorted, so the form is
// a function of the record's content alone: PublicForm of a public form
// with less kept is the public form with less kept of the original. The
// chain stays checkable: each record written since public forms exist
// carries prev_public, PublicHash of the line before it.
func PublicForm(raw []byte, keep Keep) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var rec map[string]any
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("not a ledger record: %w", err)
	}
	meta, _ := rec["metadata"].(map[string]any)
	gov, _ := meta[MetadataKey].(map[string]any)
	if gov == nil {
		return nil, errors.New("not a ledger record: no metadata." + MetadataKey)
	}
	delete(gov, "prev")
	if !keep.Source {
		delete(gov, "source")
	}
	if proc, ok := gov["process"].(map[string]any); ok {
		if !keep.Cmdline {
			delete(proc, "cmdline")
		}
		if !keep.Uids {
			delete(proc, "uid")
			delete(proc, "gid")
		}
		if exe, ok := proc["exe"].(string); ok && !keep.Exe && exe != "" {
			proc["exe"] = path.Base(exe)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// PublicHash is the chain hash of a line's public form with nothing
// extra kept: what the next record's prev_public names. Any public form
// of the line, and the line itself, have the same PublicHash.
func PublicHash(raw []byte) (string, error) {
	p, err := PublicForm(raw, Keep{})
	if err != nil {
		return "", err
	}
	return LineHash(p), nil
}
