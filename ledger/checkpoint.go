package ledger

import (
	"fmt"
	"time"
)

// CheckpointNamespace is the sshsig namespace checkpoints are signed in:
// a signature made for a checkpoint is valid for nothing else (a git
// commit, a file), and none made for anything else is valid here.
const CheckpointNamespace = "intentfs-ledger@intentfs"

// Checkpoint, on a checkpoint record, signs the chain up to the line
// before it. Head is that line's hash (the record's own prev) and
// PublicHead the hash of its public form (the record's own prev_public):
// the local ledger links its lines by the first, the git notes, which
// carry public forms (PublicForm), by the second, so a checkpoint covers
// exactly the records its links reach back to in either.
type Checkpoint struct {
	Chain      string                `json:"chain"`
	Head       string                `json:"head"`
	PublicHead string                `json:"public_head"`
	Signatures []CheckpointSignature `json:"signatures"`
}

// CheckpointSignature is one key's signature of a checkpoint's message
// (CheckpointMessage): the key's SHA256 fingerprint, as ssh-keygen -l
// prints it, and the armored signature, as ssh-keygen -Y sign writes it.
// A checkpoint carries one per signing key, so that during a key
// rotation the new key and the old one sign the same checkpoint.
type CheckpointSignature struct {
	Key       string `json:"key"`
	Signature string `json:"signature"`
}

// CheckpointMessage is the message a checkpoint's keys sign: the chain
// (the origin, named by its header's id), the head hashes it covers (of
// the line before it, and of that line's public form) and the
// checkpoint's time, one per line. It is what `ssh-keygen -Y verify -n
// intentfs-ledger@intentfs` reads on stdin to check a checkpoint by hand.
func CheckpointMessage(cp *Checkpoint, timestamp string) []byte {
	return fmt.Appendf(nil, "intentfs ledger checkpoint v1\nchain %s\nhead %s\npublic_head %s\ntime %s\n", cp.Chain, cp.Head, cp.PublicHead, timestamp)
}

// CheckpointSigner signs a checkpoint message with every key of a mount.
type CheckpointSigner func(msg []byte) ([]CheckpointSignature, error)

// NewCheckpoint returns a checkpoint record. Its head and signatures are
// made by the writer, when the record takes its place in the chain and the
// line before it is known.
func NewCheckpoint(toolVersion string, sign CheckpointSigner) *Record {
	r := NewRecord(Change{Event: EventCheckpoint, Time: time.Now()}, toolVersion)
	r.seal = func(prev, prevPublic, chain string) {
		cp := &Checkpoint{Chain: chain, Head: prev, PublicHead: prevPublic, Signatures: []CheckpointSignature{}}
		sigs, err := sign(CheckpointMessage(cp, r.Timestamp))
		if err != nil {
			// Recorded unsigned, with the reason: a checkpoint no key
			// signed covers nothing, and says why.
			r.Gov().Reason = "the checkpoint could not be signed: " + err.Error()
		} else {
			cp.Signatures = sigs
		}
		r.Gov().Checkpoint = cp
	}
	return r
}
