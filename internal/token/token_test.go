package token

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

func TestTokenRoundTrip(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := NewKeyring("shop", [][]byte{[]byte("secret-one")})
	for _, state := range []queue.State{queue.Queued, queue.Admitted} {
		for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			in := Token{State: state, ID: queue.NewVisitorID(), Since: now.Add(-time.Hour), Expires: now.Add(time.Minute),
				Pass: flags[0], Keyed: flags[1]}
			out, ok := k.Open(k.Seal(in), now)
			if !ok || out.State != in.State || out.ID != in.ID || !out.Since.Equal(in.Since) || !out.Expires.Equal(in.Expires) ||
				out.Pass != in.Pass || out.Keyed != in.Keyed {
				t.Fatalf("round trip of %+v: got %+v ok=%v", in, out, ok)
			}
		}
	}
}

// Every way a cookie can be wrong must make a new visitor, never an admitted one.
func TestTokenRejects(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	shop := NewKeyring("shop", [][]byte{[]byte("secret-one")})
	good := Token{State: queue.Admitted, ID: queue.NewVisitorID(), Expires: now.Add(time.Minute)}
	sealed := shop.Seal(good)
	raw, _ := base64.RawURLEncoding.DecodeString(sealed)

	flip := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		return base64.RawURLEncoding.EncodeToString(b)
	}
	resigned := func(i int, v byte) string {
		b := append([]byte(nil), raw...)
		b[i] = v
		// Re-sign so only this byte is wrong, not the MAC.
		shop.sum(0, b[:tokenBody], b[tokenBody:tokenBody])
		return base64.RawURLEncoding.EncodeToString(b)
	}
	withState := func(s byte) string { return resigned(1, s) }

	tests := []struct {
		name  string
		value string
		ring  *Keyring
		now   time.Time
	}{
		{"empty", "", shop, now},
		{"garbage", "not a cookie at all", shop, now},
		{"truncated", sealed[:len(sealed)-1], shop, now},
		{"extended", sealed + "A", shop, now},
		{"bit flipped in version", flip(0), shop, now},
		{"bit flipped in state", flip(1), shop, now},
		{"bit flipped in flags", flip(2), shop, now},
		{"keyed bit flipped in", base64.RawURLEncoding.EncodeToString(append(append([]byte(nil), raw[:2]...), append([]byte{raw[2] ^ flagKeyed}, raw[3:]...)...)), shop, now},
		{"unknown flag", resigned(2, 4), shop, now},
		{"every flag", resigned(2, 0xff), shop, now},
		{"bit flipped in id", flip(5), shop, now},
		{"bit flipped in since", flip(20), shop, now},
		{"bit flipped in expiry", flip(33), shop, now},
		{"bit flipped in mac", flip(tokenLen - 1), shop, now},
		{"other room", sealed, NewKeyring("other", [][]byte{[]byte("secret-one")}), now},
		{"other secret", sealed, NewKeyring("shop", [][]byte{[]byte("secret-two")}), now},
		{"expired", sealed, shop, now.Add(time.Minute)},
		{"unknown state", withState(9), shop, now},
		{"unknown state zero", withState(0), shop, now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tok, ok := tt.ring.Open(tt.value, tt.now); ok {
				t.Fatalf("accepted %q as %+v", tt.value, tok)
			}
		})
	}
}

// A secret listed as previous still verifies old cookies; new ones are signed with the
// current secret, which a Keyring that only knows the old one rejects.
func TestTokenSecretRotation(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old := NewKeyring("shop", [][]byte{[]byte("old")})
	rotated := NewKeyring("shop", [][]byte{[]byte("new"), []byte("old")})
	tok := Token{State: queue.Admitted, ID: queue.NewVisitorID(), Expires: now.Add(time.Minute)}
	if _, ok := rotated.Open(old.Seal(tok), now); !ok {
		t.Fatal("cookie signed with the previous secret was rejected during rotation")
	}
	if _, ok := old.Open(rotated.Seal(tok), now); ok {
		t.Fatal("cookie signed with the new secret verified under the old one alone")
	}
}

func BenchmarkTokenOpen(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	k := NewKeyring("shop", [][]byte{[]byte("secret-one")})
	v := k.Seal(Token{State: queue.Admitted, ID: queue.NewVisitorID(), Expires: now.Add(time.Minute)})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := k.Open(v, now); !ok {
				b.Fatal("rejected")
			}
		}
	})
}
