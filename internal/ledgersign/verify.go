package ledgersign

import (
	"errors"
	"fmt"
	"time"

	"github.com/intentfs/intentfs/internal/sshsig"
	"github.com/intentfs/intentfs/ledger"
)

// Trust is who may sign a ledger: an allowed-signers file.
type Trust struct {
	// File names where the signers came from, for messages.
	File    string
	Signers *sshsig.AllowedSigners
}

// LoadTrust reads an allowed-signers file.
func LoadTrust(path string) (*Trust, error) {
	a, err := sshsig.LoadAllowedSigners(path)
	if err != nil {
		return nil, err
	}
	return &Trust{File: path, Signers: a}, nil
}

// Signature is a checkpoint signature an allowed signer made.
type Signature struct {
	// Principals are the identities the signers file gives the key.
	Principals []string `json:"principals"`
	Key        string   `json:"key"`
}

// Verify checks a checkpoint record of chain: it must sign its own place
// in the chain (its head is its prev, its chain is chain) and carry at
// least one signature of its message, in the checkpoint namespace, by a
// key the signers file allows in that namespace at the checkpoint's time.
// It returns the first such signature, or why there is none.
func (t *Trust) Verify(r *ledger.Record, chain string) (Signature, error) {
	g := r.Gov()
	cp := g.Checkpoint
	switch {
	case g.Event != ledger.EventCheckpoint || cp == nil:
		return Signature{}, errors.New("not a checkpoint")
	case g.Prev == "" && g.PrevPublic == "":
		return Signature{}, fmt.Errorf("checkpoint %s names no line before it", r.ID)
	case g.Prev != "" && cp.Head != g.Prev:
		return Signature{}, fmt.Errorf("checkpoint %s claims head %s but follows %s", r.ID, ledger.ShortHash(cp.Head), ledger.ShortHash(g.Prev))
	case g.PrevPublic != "" && cp.PublicHead != g.PrevPublic:
		return Signature{}, fmt.Errorf("checkpoint %s claims public head %s but follows %s", r.ID, ledger.ShortHash(cp.PublicHead), ledger.ShortHash(g.PrevPublic))
	case cp.Chain != chain:
		return Signature{}, fmt.Errorf("checkpoint %s names chain %q but is in chain %q", r.ID, cp.Chain, chain)
	case len(cp.Signatures) == 0:
		return Signature{}, fmt.Errorf("checkpoint %s carries no signature", r.ID)
	}
	at, err := time.Parse(time.RFC3339Nano, r.Timestamp)
	if err != nil {
		return Signature{}, fmt.Errorf("checkpoint %s: its time %q: %w", r.ID, r.Timestamp, err)
	}
	msg := ledger.CheckpointMessage(cp, r.Timestamp)
	var errs []error
	for _, s := range cp.Signatures {
		pub, err := sshsig.Verify([]byte(s.Signature), msg, ledger.CheckpointNamespace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fp := sshsig.Fingerprint(pub)
		if fp != s.Key {
			errs = append(errs, fmt.Errorf("a signature by %s says it is by %s", fp, s.Key))
			continue
		}
		if p := t.Signers.Allowed(pub, ledger.CheckpointNamespace, at); len(p) > 0 {
			return Signature{Principals: p, Key: fp}, nil
		}
		errs = append(errs, fmt.Errorf("the key %s is not allowed to sign %s at %s by %s", fp, ledger.CheckpointNamespace, r.Timestamp, t.File))
	}
	return Signature{}, fmt.Errorf("checkpoint %s: %w", r.ID, errors.Join(errs...))
}

// Link is one line of a chain, in chain order: its hash (ledger.LineHash
// of its exact bytes), the hash of its public form (ledger.PublicHash;
// empty where no line links by it) and its record.
type Link struct {
	Hash       string
	PublicHash string
	Record     *ledger.Record
}

// follows reports whether l names p as the line before it: by prev, the
// hash of p's exact bytes, in a ledger and in records from before public
// forms; by prev_public, the hash of p's public form, in the git notes,
// whose lines are public forms without prev.
func (l Link) follows(p Link) bool {
	g := l.Record.Gov()
	if g.Prev != "" {
		return g.Prev == p.Hash
	}
	return g.PrevPublic != "" && (g.PrevPublic == p.PublicHash || g.PrevPublic == p.Hash)
}

// Coverage says which lines of a chain a valid checkpoint covers.
type Coverage struct {
	// By holds, for each line, the signature of the first valid
	// checkpoint after it that covers it; nil for a line none covers.
	By []*Signature
	// Checkpoints counts the chain's checkpoint records; Valid those an
	// allowed signer signed.
	Checkpoints, Valid int
	// Invalid says why checkpoints did not count (at most maxReasons).
	Invalid []string
}

// Signed counts the lines a checkpoint covers.
func (c *Coverage) Signed() int {
	n := 0
	for _, b := range c.By {
		if b != nil {
			n++
		}
	}
	return n
}

const maxReasons = 20

// Cover decides which lines of a chain are signed. A valid checkpoint
// (Verify) is signed; a line before it is when every link between them
// holds: each line's prev is the hash of the line before it. A broken
// link (a line removed, changed or inserted) ends what the checkpoints
// after it cover. The chain's id is taken from its header records (a
// rotated file's header continues it).
func (t *Trust) Cover(links []Link) *Coverage {
	c := &Coverage{By: make([]*Signature, len(links))}
	chains := make([]string, len(links))
	chain := ""
	for i, l := range links {
		if g := l.Record.Gov(); g.Event == ledger.EventHeader && g.Chain != "" {
			chain = g.Chain
		}
		chains[i] = chain
	}
	var by *Signature
	for i := len(links) - 1; i >= 0; i-- {
		c.By[i] = by
		r := links[i].Record
		if r.Gov().Event == ledger.EventCheckpoint {
			c.Checkpoints++
			sig, err := t.Verify(r, chains[i])
			if err == nil {
				// A valid checkpoint is signed itself, and signs what
				// comes before it.
				c.Valid++
				by = &sig
				c.By[i] = by
			} else if len(c.Invalid) < maxReasons {
				c.Invalid = append(c.Invalid, err.Error())
			}
		}
		if i > 0 && !links[i].follows(links[i-1]) {
			by = nil
		}
	}
	return c
}
