package control

import "time"

// Signing says whether a mount signs its ledger, and with what.
type Signing struct {
	// Signed is false when the mount has no signing key: its records
	// carry no signature, and a check with an allowed-signers file does
	// not count them.
	Signed bool `json:"signed"`
	// Keys are the SHA256 fingerprints of the signing keys; KeyFiles
	// where they were read from (the daemon keeps them in memory only).
	Keys     []string `json:"keys,omitempty"`
	KeyFiles []string `json:"key_files,omitempty"`
	// Checkpoints counts the signed checkpoints written since the mount
	// started; LastCheckpoint is when the last one was.
	Checkpoints    uint64     `json:"checkpoints"`
	LastCheckpoint *time.Time `json:"last_checkpoint,omitempty"`
}
