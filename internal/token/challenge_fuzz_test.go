package token

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testalloc"
)

// A proof is what a client controls completely. CheckProof must accept only proofs
// of challenges this room minted, with the work done, and must not do more for a
// long input than for a short one.
func FuzzCheckProof(f *testing.F) {
	k := NewKeyring("shop", [][]byte{fuzzSecret})
	minted := map[string]bool{}
	for _, d := range []int{0, 1, 4} {
		c := k.mintChallenge(d, fuzzNow, [16]byte{byte(d)}) // the same in every fuzz worker
		minted[c] = true
		f.Add(solve(f, c, d), uint8(d))
		f.Add(c+":", uint8(d))
		f.Add(c+":"+strings.Repeat("z", MaxNonce+1), uint8(d))
	}
	other := NewKeyring("shop2", [][]byte{fuzzSecret}).mintChallenge(0, fuzzNow, [16]byte{})
	f.Add(other+":0", uint8(0))
	f.Add("", uint8(0))
	f.Add(":", uint8(0))
	f.Add(strings.Repeat("A", ChallengeText)+":0", uint8(0))

	f.Fuzz(func(t *testing.T, proof string, difficulty uint8) {
		c, err := k.CheckProof(proof, int(difficulty), fuzzNow)
		if !testalloc.Race {
			if allocs := testing.AllocsPerRun(1, func() { _, _ = k.CheckProof(proof, int(difficulty), fuzzNow) }); allocs > 2 {
				t.Errorf("CheckProof of a %d-byte input made %v allocations", len(proof), allocs)
			}
		}
		if err != nil {
			return
		}
		if !minted[proof[:ChallengeText]] {
			t.Fatalf("CheckProof accepted %q, whose challenge this room never minted", proof)
		}
		if len(proof) > MaxProof || c.Difficulty < int(difficulty) {
			t.Fatalf("CheckProof accepted %q (difficulty %d) for a room asking %d", proof, c.Difficulty, difficulty)
		}
		if sum := sha256.Sum256([]byte(proof)); LeadingZeroBits(sum[:]) < c.Difficulty {
			t.Fatalf("CheckProof accepted %q without the work", proof)
		}
		if strings.ContainsFunc(proof[ChallengeText+1:], func(r rune) bool { return r > 127 || !nonceByte(byte(r)) }) {
			t.Fatalf("CheckProof accepted the nonce %q", proof[ChallengeText+1:])
		}
	})
}
