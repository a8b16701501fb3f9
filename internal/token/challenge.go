package token

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math/bits"
	"time"
)

// A Challenge is what a new visitor must do work on before it may queue (the room's
// proof_of_work): the server mints it and signs it with the room's secret, so checking
// a proof needs no store lookup but the once-only check. It is bound to the room (the
// MAC covers the room name), carries its difficulty and expiry, and a random part
// that names it in the once-only check.
//
// Wire format, base64url without padding (ChallengeText = 56 characters):
//
//	version 0x43(1) | difficulty(1) | expiry unix seconds(8) | random(16) | HMAC-SHA256(32) cut to 16
//
// The MAC covers "challenge\x00", the room's label ("waiting_room\x00" room "\x00",
// as a Token's) and the body before it: a Token and a Challenge can never be taken
// for each other. 128 bits of tag are as many as a forger can never guess.
//
// A proof is "<challenge>:<nonce>", the nonce 1 to MaxNonce characters of
// [0-9A-Za-z_-]. It is valid when the SHA-256 of those bytes starts with at least
// difficulty zero bits.
type Challenge struct {
	Difficulty int
	Expires    time.Time
	Random     [16]byte
}

// ChallengeLife is how long a challenge may be answered: long enough for a slow phone
// at the highest difficulty an operator sensibly sets, short enough that the
// once-only check remembers little (each accepted proof is kept until its
// challenge's expiry).
const ChallengeLife = 5 * time.Minute

// MaxDifficulty is the most leading zero bits a room may ask for (2^32 hashes on
// average: hours in a browser, so anything near it is a configuration mistake, but
// a bound keeps the byte and the client's loop honest).
const MaxDifficulty = 32

// MaxNonce is the longest nonce a proof may carry.
const MaxNonce = 64

const (
	challengeVersion = 0x43 // "C": never a Token's version byte, so neither is read as the other
	challengeBody    = 1 + 1 + 8 + 16
	challengeTag     = 16
	challengeLen     = challengeBody + challengeTag
	// ChallengeText is the length of a challenge as the client gets it.
	ChallengeText = (challengeLen*8 + 5) / 6
	// MaxProof is the longest proof checked at all: anything longer is refused
	// before any hashing.
	MaxProof = ChallengeText + 1 + MaxNonce
)

// strictText decodes a challenge: strict, so each challenge has one spelling.
var strictText = base64.RawURLEncoding.Strict()

// challengeDomain starts every challenge's MAC input (see Challenge).
var challengeDomain = []byte("challenge\x00")

// Why a proof was refused. Each is answered alike (a fresh challenge); they are
// told apart for tests and debug logs.
var (
	ErrProofShape      = errors.New("proof is not <challenge>:<nonce>")
	ErrProofExpired    = errors.New("challenge expired")
	ErrProofDifficulty = errors.New("challenge is easier than the room asks")
	ErrProofWork       = errors.New("proof has too few leading zero bits")
	ErrProofSignature  = errors.New("challenge was not signed by this room")
)

// MintChallenge returns a fresh challenge of difficulty bits, answerable until
// now+ChallengeLife.
func (k *Keyring) MintChallenge(difficulty int, now time.Time) string {
	var random [16]byte
	_, _ = rand.Read(random[:])
	return k.mintChallenge(difficulty, now, random)
}

func (k *Keyring) mintChallenge(difficulty int, now time.Time, random [16]byte) string {
	var raw [challengeLen]byte
	raw[0] = challengeVersion
	raw[1] = byte(difficulty)
	binary.BigEndian.PutUint64(raw[2:10], uint64(now.Add(ChallengeLife).Unix()))
	copy(raw[10:26], random[:])
	m := k.macs[0].Get().(*mac)
	copy(raw[challengeBody:], m.challengeMAC(k.label, raw[:challengeBody]))
	k.macs[0].Put(m)
	return base64.RawURLEncoding.EncodeToString(raw[:])
}

// CheckProof verifies proof for a room that asks for at least difficulty bits now
// and returns its challenge. The cost is bounded whatever the input: a length check,
// one SHA-256 of at most MaxProof bytes, one HMAC per secret of the keyring (one,
// unless a rotation left previous ones) and no store call. Whether the challenge was
// already answered is the caller's once-only check (queue.Store's Once), keyed by
// Challenge.Key, until Challenge.Expires.
func (k *Keyring) CheckProof(proof string, difficulty int, now time.Time) (Challenge, error) {
	if len(proof) < ChallengeText+2 || len(proof) > MaxProof || proof[ChallengeText] != ':' {
		return Challenge{}, ErrProofShape
	}
	for i := ChallengeText + 1; i < len(proof); i++ {
		if !nonceByte(proof[i]) {
			return Challenge{}, ErrProofShape
		}
	}
	var text [ChallengeText]byte
	copy(text[:], proof)
	var raw [challengeLen]byte
	if n, err := strictText.Decode(raw[:], text[:]); err != nil || n != challengeLen {
		return Challenge{}, ErrProofShape
	}
	if raw[0] != challengeVersion || raw[1] > MaxDifficulty {
		return Challenge{}, ErrProofShape
	}
	c := Challenge{Difficulty: int(raw[1]), Expires: time.Unix(int64(binary.BigEndian.Uint64(raw[2:10])), 0)}
	copy(c.Random[:], raw[10:26])
	if !now.Before(c.Expires) {
		return Challenge{}, ErrProofExpired
	}
	if c.Difficulty < difficulty {
		return Challenge{}, ErrProofDifficulty
	}
	if sum := sha256.Sum256([]byte(proof)); LeadingZeroBits(sum[:]) < c.Difficulty {
		return Challenge{}, ErrProofWork
	}
	for i := range k.macs {
		m := k.macs[i].Get().(*mac)
		ok := hmac.Equal(m.challengeMAC(k.label, raw[:challengeBody]), raw[challengeBody:])
		k.macs[i].Put(m)
		if ok {
			return c, nil
		}
	}
	return Challenge{}, ErrProofSignature
}

// Key names the challenge in the once-only check: its random part, as text.
func (c Challenge) Key() string { return base64.RawURLEncoding.EncodeToString(c.Random[:]) }

// challengeMAC is the challenge's tag: the HMAC of the domain, the room's label and
// body, cut to challengeTag bytes.
func (m *mac) challengeMAC(label, body []byte) []byte {
	n := copy(m.body[:], body)
	m.h.Reset()
	m.h.Write(challengeDomain)
	m.h.Write(label)
	m.h.Write(m.body[:n])
	return m.h.Sum(m.sum[:0])[:challengeTag]
}

// nonceByte reports whether b may appear in a nonce: [0-9A-Za-z_-].
func nonceByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '_' || b == '-'
}

// LeadingZeroBits counts the zero bits sum starts with.
func LeadingZeroBits(sum []byte) int {
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}
