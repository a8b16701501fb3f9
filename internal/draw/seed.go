package draw

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// SeedSize is the length of a seed in bytes.
const SeedSize = 32

// A Seed is what a draw's order follows from: picked once for the fleet when entries
// open, kept secret in the store until the draw, then published.
type Seed [SeedSize]byte

// NewSeed is a fresh seed from the system's random source.
func NewSeed() Seed { return SeedFrom(nil) }

// SeedFrom is a seed read from random (Fill).
func SeedFrom(random io.Reader) Seed {
	var s Seed
	Fill(random, s[:])
	return s
}

// Fill fills b from random, or from the system's random source when random is nil. A
// rehearsal gives its seeded generator, so that its draws replay; a room never does.
func Fill(random io.Reader, b []byte) {
	if random == nil {
		rand.Read(b) // never fails (crypto/rand, Go 1.24+)
		return
	}
	if _, err := io.ReadFull(random, b); err != nil {
		panic(fmt.Sprintf("draw: reading %d random bytes: %v", len(b), err)) // a seeded generator never fails
	}
}

// String is the seed as published: 64 lowercase hex digits.
func (s Seed) String() string { return hex.EncodeToString(s[:]) }

// Commitment is what the room publishes before entries open: "sha256:" and the hex of
// SHA-256 of the seed's 32 bytes (not of its hex text).
func (s Seed) Commitment() string { return sha256Text(s[:]) }

// Matches reports whether commitment is this seed's, as Commitment writes it.
func (s Seed) Matches(commitment string) bool {
	c := s.Commitment()
	return len(c) == len(commitment) && subtle.ConstantTimeCompare([]byte(c), []byte(commitment)) == 1
}

// ParseSeed reads a seed as String writes it: exactly 64 lowercase hex digits.
func ParseSeed(text string) (Seed, error) {
	var s Seed
	if err := parseHex(s[:], text); err != nil {
		return Seed{}, fmt.Errorf("seed: %w", err)
	}
	return s, nil
}

// sha256Text is "sha256:" and the lowercase hex of SHA-256 of b: how a commitment and
// an entries hash are written.
func sha256Text(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// parseHex decodes exactly 2*len(dst) lowercase hex digits into dst. Upper case is
// refused: an entry id is compared as text, so it has one spelling only.
func parseHex(dst []byte, text string) error {
	if len(text) != 2*len(dst) {
		return fmt.Errorf("want %d lowercase hex digits, got %d characters", 2*len(dst), len(text))
	}
	for i := 0; i < len(text); i++ {
		if c := text[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("want lowercase hex digits, got %q at %d", c, i)
		}
	}
	_, err := hex.Decode(dst, []byte(text))
	return err
}

// checkSHA256Text refuses what sha256Text could not have written.
func checkSHA256Text(what, text string) error {
	hexPart, ok := strings.CutPrefix(text, "sha256:")
	if !ok {
		return fmt.Errorf("%s: want \"sha256:\" and 64 lowercase hex digits, got %q", what, clip(text))
	}
	var sum [sha256.Size]byte
	if err := parseHex(sum[:], hexPart); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// clip shortens what an error quotes from hostile input, at a character's start.
func clip(s string) string {
	n := 80
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
