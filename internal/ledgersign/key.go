// Package ledgersign signs a mount's ledger with checkpoints and decides
// which records a signature covers: the daemon's signing keys (read once,
// kept in memory), the checkpoint signatures they make, and the
// verification of a chain's checkpoints against an allowed-signers file
// (git's gpg.ssh.allowedSignersFile, as ssh-keygen -Y verify reads it).
package ledgersign

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/crypto/ssh"

	"github.com/intentfs/intentfs/internal/sshsig"
	"github.com/intentfs/intentfs/ledger"
)

// MaxKeyBytes bounds a private key file read: an OpenSSH 16384-bit RSA
// key is under 13 KiB.
const MaxKeyBytes = 64 << 10

// LoadKey reads an SSH private key (what ssh-keygen writes, and git's
// gpg.format=ssh signs with) for the daemon to keep in memory. The file
// must be a regular file reached without a symlink at its last
// component, owned by root or by ownerUID (the human who mounts), and
// readable by nobody else (mode & 077 == 0): a key others could read
// would sign for them too. It is opened non-blocking, so a FIFO put in
// its place cannot hang the daemon. A key with a passphrase is refused:
// the daemon has no one to ask.
func LoadKey(path string, ownerUID int) (ssh.Signer, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("the signing key %s is a symlink: name the key file itself", path)
		}
		return nil, fmt.Errorf("the signing key %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("the signing key %s: %w", path, err)
	}
	if err := checkKeyFile(path, st, ownerUID); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the signing key %s: %w", path, err)
	}
	if len(data) > MaxKeyBytes {
		return nil, fmt.Errorf("the signing key %s is larger than %d bytes: not an SSH private key", path, MaxKeyBytes)
	}
	s, err := ssh.ParsePrivateKey(data)
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		return nil, fmt.Errorf("the signing key %s has a passphrase, and the daemon has no one to ask: give it a key of its own without one (ssh-keygen -t ed25519 -N '' -f FILE), kept where only root or you can read it", path)
	case err != nil:
		return nil, fmt.Errorf("the signing key %s is not an SSH private key (ssh-keygen -t ed25519 -f FILE makes one): %w", path, err)
	}
	return s, nil
}

// checkKeyFile refuses a key file that is not a regular file, is owned by
// someone other than root or ownerUID, or that others may read.
func checkKeyFile(path string, st syscall.Stat_t, ownerUID int) error {
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fmt.Errorf("the signing key %s is not a regular file", path)
	}
	if st.Uid != 0 && int(st.Uid) != ownerUID {
		return fmt.Errorf("the signing key %s is owned by uid %d, not by root or by you (uid %d): whoever owns it can change it; chown it", path, st.Uid, ownerUID)
	}
	if st.Mode&0o077 != 0 {
		return fmt.Errorf("the signing key %s has mode %04o: others may read it, and then sign as the mount; chmod 600 %s", path, st.Mode&0o7777, path)
	}
	return nil
}

// Signer signs checkpoints with one key or more (more during a key
// rotation: the old key and the new one sign the same checkpoints).
type Signer struct {
	keys []ssh.Signer
	rand io.Reader
}

// NewSigner returns a signer of checkpoints with keys, drawing the
// signatures' randomness from rand (the ECDSA keys need it).
func NewSigner(rand io.Reader, keys ...ssh.Signer) *Signer {
	return &Signer{keys: keys, rand: rand}
}

// Sign signs a checkpoint message with every key.
func (s *Signer) Sign(msg []byte) ([]ledger.CheckpointSignature, error) {
	out := make([]ledger.CheckpointSignature, 0, len(s.keys))
	for _, k := range s.keys {
		sig, err := sshsig.Sign(s.rand, k, ledger.CheckpointNamespace, msg)
		if err != nil {
			return nil, fmt.Errorf("signing with %s: %w", sshsig.Fingerprint(k.PublicKey()), err)
		}
		out = append(out, ledger.CheckpointSignature{Key: sshsig.Fingerprint(k.PublicKey()), Signature: string(sig)})
	}
	return out, nil
}

// Fingerprints lists the keys' SHA256 fingerprints.
func (s *Signer) Fingerprints() []string {
	out := make([]string, len(s.keys))
	for i, k := range s.keys {
		out[i] = sshsig.Fingerprint(k.PublicKey())
	}
	return out
}
