package token

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A value opened once is found in the verified cache, and the cache opens nothing
// the full check would not: no value one bit away from it, not it once expired, not
// it under a keyring of other secrets.
func TestVerifiedCacheOpensNothingMore(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	shop := NewKeyring("shop", [][]byte{[]byte("secret-one")})
	good := Token{State: queue.Admitted, ID: queue.NewVisitorID(), Since: now.Add(-time.Minute), Expires: now.Add(time.Minute), Waited: 3 * time.Second}
	sealed := shop.Seal(good)
	first, ok := shop.Open(sealed, now)
	if !ok {
		t.Fatal("the good value did not open")
	}
	if shop.verified.slot(sealed).Load() == nil {
		t.Fatal("an admitted value that opened is not in the cache")
	}
	again, ok := shop.Open(sealed, now)
	if !ok || again != first {
		t.Fatalf("from the cache: %+v %v, want %+v", again, ok, first)
	}

	raw, _ := base64.RawURLEncoding.DecodeString(sealed)
	for i := range raw {
		for bit := range 8 {
			b := append([]byte(nil), raw...)
			b[i] ^= 1 << bit
			flipped := base64.RawURLEncoding.EncodeToString(b)
			if tok, ok := shop.Open(flipped, now); ok {
				t.Fatalf("byte %d bit %d flipped opened as %+v", i, bit, tok)
			}
			// The same, had it hashed to the good value's slot.
			var text [Text]byte
			copy(text[:], flipped)
			if tok, ok := shop.verified.find(sealed, &text, now); ok {
				t.Fatalf("byte %d bit %d flipped found in the good value's slot as %+v", i, bit, tok)
			}
		}
	}
	if _, ok := shop.Open(sealed, now.Add(time.Minute)); ok {
		t.Fatal("the cached value opened once expired")
	}
	other := NewKeyring("shop", [][]byte{[]byte("secret-two")})
	if _, ok := other.Open(sealed, now); ok {
		t.Fatal("a keyring of another secret opened the value the first one cached")
	}
}

// A waiter's cookie is re-sealed on every request: caching it would only churn.
func TestVerifiedCacheKeepsOnlyAdmitted(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	shop := NewKeyring("shop", [][]byte{[]byte("secret-one")})
	sealed := shop.Seal(Token{State: queue.Queued, ID: queue.NewVisitorID(), Since: now, Expires: now.Add(time.Hour)})
	if _, ok := shop.Open(sealed, now); !ok {
		t.Fatal("the queued value did not open")
	}
	if shop.verified.slot(sealed).Load() != nil {
		t.Fatal("a queued value was cached")
	}
}

// The admitted visitor's hot path allocates nothing once its value is cached.
func TestVerifiedOpenAllocatesNothing(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	shop := NewKeyring("shop", [][]byte{[]byte("secret-one")})
	sealed := shop.Seal(Token{State: queue.Admitted, ID: queue.NewVisitorID(), Since: now, Expires: now.Add(time.Hour)})
	shop.Open(sealed, now)
	if n := testing.AllocsPerRun(100, func() { shop.Open(sealed, now) }); n != 0 {
		t.Fatalf("%v allocations per open", n)
	}
}
