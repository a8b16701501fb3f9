package token

import (
	"crypto/sha256"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// solve finds a nonce for challenge as the page does: counting up from 0.
func solve(t testing.TB, challenge string, difficulty int) string {
	t.Helper()
	for n := 0; n < 1<<26; n++ {
		proof := challenge + ":" + strconv.Itoa(n)
		if sum := sha256.Sum256([]byte(proof)); LeadingZeroBits(sum[:]) >= difficulty {
			return proof
		}
	}
	t.Fatalf("no nonce found for %q at difficulty %d", challenge, difficulty)
	return ""
}

// unsolve finds a nonce whose proof falls short of difficulty.
func unsolve(challenge string, difficulty int) string {
	for n := 0; ; n++ {
		proof := challenge + ":" + strconv.Itoa(n)
		if sum := sha256.Sum256([]byte(proof)); LeadingZeroBits(sum[:]) < difficulty {
			return proof
		}
	}
}

func TestProofIsCheckedByWorkRoomSecretAndTime(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := NewKeyring("shop", [][]byte{[]byte("secret")})
	c := k.MintChallenge(8, now)
	if len(c) != ChallengeText {
		t.Fatalf("challenge %q has %d characters, want %d", c, len(c), ChallengeText)
	}
	good := solve(t, c, 8)
	rotated := NewKeyring("shop", [][]byte{[]byte("new"), []byte("secret")})
	otherRoom := NewKeyring("shop2", [][]byte{[]byte("secret")})
	otherSecret := NewKeyring("shop", [][]byte{[]byte("other")})
	nonce := good[ChallengeText+1:]
	flipped := []byte(c)
	flipped[20] = 'A' // a letter of the random part: still a well-formed challenge
	if c[20] == 'A' {
		flipped[20] = 'B'
	}

	tests := []struct {
		name       string
		k          *Keyring
		proof      string
		difficulty int
		at         time.Time
		want       error
	}{
		{"valid", k, good, 8, now, nil},
		{"valid under a rotated keyring", rotated, good, 8, now, nil},
		{"valid when the room asks for less now", k, good, 4, now, nil},
		{"valid just before expiry", k, good, 8, now.Add(ChallengeLife - time.Second), nil},
		{"expired", k, good, 8, now.Add(ChallengeLife), ErrProofExpired},
		{"room raised the difficulty", k, good, 9, now, ErrProofDifficulty},
		{"too little work", k, unsolve(c, 8), 8, now, ErrProofWork},
		{"another room", otherRoom, good, 8, now, ErrProofSignature},
		{"another secret", otherSecret, good, 8, now, ErrProofSignature},
		{"a changed challenge", k, solve(t, string(flipped), 8), 8, now, ErrProofSignature},
		{"empty", k, "", 8, now, ErrProofShape},
		{"no nonce", k, c + ":", 8, now, ErrProofShape},
		{"no colon", k, c + nonce, 8, now, ErrProofShape},
		{"nonce too long", k, c + ":" + strings.Repeat("a", MaxNonce+1), 8, now, ErrProofShape},
		{"nonce with a space", k, c + ":1 2", 8, now, ErrProofShape},
		{"nonce with a colon", k, c + ":1:2", 8, now, ErrProofShape},
		{"nonce not ASCII", k, c + ":é", 8, now, ErrProofShape},
		{"challenge cut short", k, c[1:] + ":" + nonce, 8, now, ErrProofShape},
		{"challenge with a line break", k, c[:10] + "\n" + c[11:] + ":" + nonce, 8, now, ErrProofShape},
		{"oversized", k, strings.Repeat("A", 1<<20), 8, now, ErrProofShape},
		{"a visitor token", k, k.Seal(Token{State: 1, Expires: now.Add(time.Hour)})[:ChallengeText] + ":1", 0, now, ErrProofShape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.k.CheckProof(tt.proof, tt.difficulty, tt.at)
			if !errors.Is(err, tt.want) {
				t.Fatalf("CheckProof = %v, want %v", err, tt.want)
			}
			if err == nil && (got.Difficulty != 8 || !got.Expires.Equal(now.Add(ChallengeLife))) {
				t.Fatalf("challenge = %+v, want difficulty 8 expiring at %v", got, now.Add(ChallengeLife))
			}
		})
	}
}

func TestChallengesAreDistinct(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := NewKeyring("shop", [][]byte{[]byte("secret")})
	seen := map[string]bool{}
	for range 1000 {
		proof := k.MintChallenge(0, now) + ":0"
		c, err := k.CheckProof(proof, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		if seen[c.Key()] {
			t.Fatalf("key %q minted twice", c.Key())
		}
		seen[c.Key()] = true
	}
}

func TestLeadingZeroBits(t *testing.T) {
	for _, tt := range []struct {
		sum  []byte
		want int
	}{
		{[]byte{0x80}, 0}, {[]byte{0x01}, 7}, {[]byte{0, 0x40}, 9}, {[]byte{0, 0, 0, 0, 1}, 39}, {[]byte{0, 0}, 16},
	} {
		if got := LeadingZeroBits(tt.sum); got != tt.want {
			t.Errorf("LeadingZeroBits(%x) = %d, want %d", tt.sum, got, tt.want)
		}
	}
}

// BenchmarkCheckProof is the server's cost of one valid proof (docs/proof-of-work.md).
func BenchmarkCheckProof(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	k := NewKeyring("shop", [][]byte{[]byte("secret")})
	proof := solve(b, k.MintChallenge(16, now), 16)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.CheckProof(proof, 16, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMintChallenge is the server's cost of one challenge.
func BenchmarkMintChallenge(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	k := NewKeyring("shop", [][]byte{[]byte("secret")})
	b.ReportAllocs()
	for b.Loop() {
		_ = k.MintChallenge(16, now)
	}
}
