package draw

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"
)

// keyInfo starts the HKDF info of a room's receipt key; the room's name follows it.
const keyInfo = "waiting_room receipt key\x00"

// publicKeyLen is the length of a public key as text: base64url of 32 bytes, unpadded.
const publicKeyLen = 43

// A Signer signs one room's receipts with the room's Ed25519 key. The key is derived
// from the room's secret, so every instance that shares the secret signs alike and
// nothing about it is stored:
//
//	private key seed = HKDF-SHA256(secret, salt: none, info: "waiting_room receipt key" 0x00 room, 32 bytes)
//	private key      = Ed25519 key of that seed (RFC 8032)
//
// Every other use of the secret (cookies, passes, hand-off codes, challenges, keyed
// visitor ids) keys an HMAC with it directly; HKDF instead feeds the secret to
// HMAC as the message under the all-zero salt, then expands under the info, so the
// signing key is no MAC the room gives out under any other label, and knowing it
// (it never leaves the process) says nothing of the secret. The room's name in the
// info makes two rooms that share a secret sign with different keys, so a receipt of
// one never verifies against the other's page.
//
// A Signer is safe for concurrent use.
type Signer struct {
	room   string
	key    ed25519.PrivateKey
	public string
}

// NewSigner derives room's key from secret (the room's signing secret, the first of
// its `secret` list).
func NewSigner(room string, secret []byte) (*Signer, error) {
	if err := checkRoom(room); err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	if len(secret) == 0 {
		return nil, fmt.Errorf("receipt key: the secret is empty")
	}
	seed, err := hkdf.Key(sha256.New, secret, nil, keyInfo+room, ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	key := ed25519.NewKeyFromSeed(seed)
	return &Signer{
		room:   room,
		key:    key,
		public: base64.RawURLEncoding.EncodeToString(key.Public().(ed25519.PublicKey)),
	}, nil
}

// PublicKey is the room's public key as the draw page publishes it: its 32 bytes,
// base64url unpadded (43 characters).
func (s *Signer) PublicKey() string { return s.public }

// Sign returns r signed: Issued kept to the second in UTC, Signature set. r must be of
// the Signer's room and a receipt a room gives out (see Receipt.Canonical).
func (s *Signer) Sign(r Receipt) (Receipt, error) {
	if r.Room != s.room {
		return Receipt{}, fmt.Errorf("signing a receipt of room %q with room %q's key", clip(r.Room), clip(s.room))
	}
	r.Issued = r.Issued.UTC().Truncate(time.Second)
	msg, err := r.Canonical()
	if err != nil {
		return Receipt{}, err
	}
	r.Signature = base64.RawURLEncoding.EncodeToString(ed25519.Sign(s.key, msg))
	return r, nil
}

// parsePublicKey reads a public key as PublicKey writes it.
func parsePublicKey(text string) (ed25519.PublicKey, error) {
	if len(text) != publicKeyLen {
		return nil, fmt.Errorf("public_key must be %d characters of base64url, got %d", publicKeyLen, len(text))
	}
	key := make([]byte, ed25519.PublicKeySize)
	if n, err := strictBase64.Decode(key, []byte(text)); err != nil || n != len(key) {
		return nil, fmt.Errorf("public_key is not base64url (unpadded) of %d bytes", ed25519.PublicKeySize)
	}
	return key, nil
}

// checkSignature reports whether r's signature is the key's over r's canonical form.
func checkSignature(key ed25519.PublicKey, r Receipt) error {
	msg, err := r.Canonical()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var sig [ed25519.SignatureSize]byte
	if len(r.Signature) != signatureLen {
		return fmt.Errorf("%w: the signature is not %d characters", ErrSignature, signatureLen)
	}
	if n, err := strictBase64.Decode(sig[:], []byte(r.Signature)); err != nil || n != len(sig) {
		return fmt.Errorf("%w: the signature is not base64url (unpadded) of %d bytes", ErrSignature, len(sig))
	}
	if !ed25519.Verify(key, msg, sig[:]) {
		return fmt.Errorf("%w: the signature is not the room's over this receipt", ErrSignature)
	}
	return nil
}
