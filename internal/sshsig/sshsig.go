// Package sshsig signs and verifies messages in OpenSSH's signature format
// (PROTOCOL.sshsig: what `ssh-keygen -Y sign` writes and `ssh-keygen -Y
// verify` and git's gpg.format=ssh read), with golang.org/x/crypto/ssh for
// the keys and signature algorithms, and reads the allowed-signers file
// that `ssh-keygen -Y verify` and git's gpg.ssh.allowedSignersFile use.
// Nothing here runs ssh-keygen: verifying is a library call.
package sshsig

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/ssh"
)

const (
	magic   = "SSHSIG"
	version = 1
	// hashAlgorithm is the message hash this package signs with, as
	// ssh-keygen does by default.
	hashAlgorithm = "sha512"
	armorBegin    = "-----BEGIN SSH SIGNATURE-----"
	armorEnd      = "-----END SSH SIGNATURE-----"
	// maxArmored bounds an armored signature read: one of an 16384-bit
	// RSA key is under 6 KiB.
	maxArmored = 64 << 10
)

// signedData is what the key signs: the magic, then these fields.
type signedData struct {
	Namespace     string
	Reserved      string
	HashAlgorithm string
	Hash          string
}

// blob is a signature as it is stored, after the magic.
type blob struct {
	Version       uint32
	PublicKey     string
	Namespace     string
	Reserved      string
	HashAlgorithm string
	Signature     string
}

func messageHash(alg string, msg []byte) ([]byte, error) {
	switch alg {
	case "sha512":
		h := sha512.Sum512(msg)
		return h[:], nil
	case "sha256":
		h := sha256.Sum256(msg)
		return h[:], nil
	}
	return nil, fmt.Errorf("unsupported hash algorithm %q", alg)
}

func toSign(namespace, alg string, msg []byte) ([]byte, error) {
	h, err := messageHash(alg, msg)
	if err != nil {
		return nil, err
	}
	return append([]byte(magic), ssh.Marshal(signedData{Namespace: namespace, HashAlgorithm: alg, Hash: string(h)})...), nil
}

// Sign signs msg with s in namespace (which says what the signature is
// for, so that one made for one purpose is never valid for another) and
// returns the armored signature, as ssh-keygen -Y sign writes it. An RSA
// key signs with rsa-sha2-512 (OpenSSH refuses SHA-1 signatures here).
func Sign(rand io.Reader, s ssh.Signer, namespace string, msg []byte) ([]byte, error) {
	if namespace == "" {
		return nil, errors.New("sshsig: a signature needs a namespace")
	}
	data, err := toSign(namespace, hashAlgorithm, msg)
	if err != nil {
		return nil, err
	}
	var sig *ssh.Signature
	if s.PublicKey().Type() == ssh.KeyAlgoRSA {
		as, ok := s.(ssh.AlgorithmSigner)
		if !ok {
			return nil, errors.New("sshsig: this RSA signer cannot sign with rsa-sha2-512")
		}
		sig, err = as.SignWithAlgorithm(rand, data, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = s.Sign(rand, data)
	}
	if err != nil {
		return nil, fmt.Errorf("sshsig: signing: %w", err)
	}
	b := blob{Version: version, PublicKey: string(s.PublicKey().Marshal()), Namespace: namespace,
		HashAlgorithm: hashAlgorithm, Signature: string(ssh.Marshal(sig))}
	return armor(append([]byte(magic), ssh.Marshal(b)...)), nil
}

func armor(raw []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(raw)
	var out bytes.Buffer
	out.WriteString(armorBegin + "\n")
	for len(enc) > 70 {
		out.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	out.WriteString(enc + "\n" + armorEnd + "\n")
	return out.Bytes()
}

func unarmor(armored []byte) ([]byte, error) {
	if len(armored) > maxArmored {
		return nil, fmt.Errorf("sshsig: a signature of %d bytes, more than %d", len(armored), maxArmored)
	}
	s := strings.TrimSpace(string(armored))
	body, ok := strings.CutPrefix(s, armorBegin)
	if !ok {
		return nil, errors.New("sshsig: not an SSH signature (no " + armorBegin + " line)")
	}
	body, ok = strings.CutSuffix(body, armorEnd)
	if !ok {
		return nil, errors.New("sshsig: the signature has no " + armorEnd + " line")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), ""))
	if err != nil {
		return nil, fmt.Errorf("sshsig: the signature is not base64: %w", err)
	}
	return raw, nil
}

// Verify checks that armored is a valid signature of msg in namespace and
// returns the key that made it. Whether that key may sign is for the
// caller to decide (AllowedSigners).
func Verify(armored, msg []byte, namespace string) (ssh.PublicKey, error) {
	raw, err := unarmor(armored)
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(raw, []byte(magic))
	if !ok {
		return nil, errors.New("sshsig: the signature does not start with " + magic)
	}
	var b blob
	if err := ssh.Unmarshal(rest, &b); err != nil {
		return nil, fmt.Errorf("sshsig: malformed signature: %w", err)
	}
	if b.Version != version {
		return nil, fmt.Errorf("sshsig: signature version %d, not %d", b.Version, version)
	}
	if b.Namespace != namespace {
		return nil, fmt.Errorf("sshsig: the signature is for namespace %q, not %q", b.Namespace, namespace)
	}
	pub, err := ssh.ParsePublicKey([]byte(b.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("sshsig: the signature's public key: %w", err)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal([]byte(b.Signature), &sig); err != nil {
		return nil, fmt.Errorf("sshsig: malformed signature: %w", err)
	}
	if pub.Type() == ssh.KeyAlgoRSA && sig.Format != ssh.KeyAlgoRSASHA512 && sig.Format != ssh.KeyAlgoRSASHA256 {
		return nil, fmt.Errorf("sshsig: RSA signature with %q: only rsa-sha2-256 and rsa-sha2-512 are accepted", sig.Format)
	}
	data, err := toSign(namespace, b.HashAlgorithm, msg)
	if err != nil {
		return nil, fmt.Errorf("sshsig: %w", err)
	}
	if err := pub.Verify(data, &sig); err != nil {
		return nil, fmt.Errorf("sshsig: the signature does not match the message: %w", err)
	}
	return pub, nil
}

// Fingerprint is a key's SHA256 fingerprint, as ssh-keygen -l prints it.
func Fingerprint(pub ssh.PublicKey) string { return ssh.FingerprintSHA256(pub) }
