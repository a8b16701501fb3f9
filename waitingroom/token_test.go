package waitingroom

import (
	"encoding/base64"
	"testing"
	"time"
)

func TestTokenRoundTrip(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := newKeyring("shop", [][]byte{[]byte("secret-one")})
	for _, state := range []State{Queued, Admitted} {
		in := token{state: state, id: NewVisitorID(), since: now.Add(-time.Hour), expires: now.Add(time.Minute)}
		out, ok := k.open(k.seal(in), now)
		if !ok || out.state != in.state || out.id != in.id || !out.since.Equal(in.since) || !out.expires.Equal(in.expires) {
			t.Fatalf("round trip of %v: got %+v ok=%v", in, out, ok)
		}
	}
}

// Every way a cookie can be wrong must make a new visitor, never an admitted one.
func TestTokenRejects(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	shop := newKeyring("shop", [][]byte{[]byte("secret-one")})
	good := token{state: Admitted, id: NewVisitorID(), expires: now.Add(time.Minute)}
	sealed := shop.seal(good)
	raw, _ := base64.RawURLEncoding.DecodeString(sealed)

	flip := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		return base64.RawURLEncoding.EncodeToString(b)
	}
	withState := func(s byte) string {
		b := append([]byte(nil), raw...)
		b[1] = s
		// Re-sign so only the state is wrong, not the MAC.
		shop.sum(0, b[:tokenBody], b[tokenBody:tokenBody])
		return base64.RawURLEncoding.EncodeToString(b)
	}

	tests := []struct {
		name  string
		value string
		ring  *keyring
		now   time.Time
	}{
		{"empty", "", shop, now},
		{"garbage", "not a cookie at all", shop, now},
		{"truncated", sealed[:len(sealed)-1], shop, now},
		{"extended", sealed + "A", shop, now},
		{"bit flipped in version", flip(0), shop, now},
		{"bit flipped in state", flip(1), shop, now},
		{"bit flipped in id", flip(5), shop, now},
		{"bit flipped in since", flip(20), shop, now},
		{"bit flipped in expiry", flip(33), shop, now},
		{"bit flipped in mac", flip(tokenLen - 1), shop, now},
		{"other room", sealed, newKeyring("other", [][]byte{[]byte("secret-one")}), now},
		{"other secret", sealed, newKeyring("shop", [][]byte{[]byte("secret-two")}), now},
		{"expired", sealed, shop, now.Add(time.Minute)},
		{"unknown state", withState(9), shop, now},
		{"unknown state zero", withState(0), shop, now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tok, ok := tt.ring.open(tt.value, tt.now); ok {
				t.Fatalf("accepted %q as %+v", tt.value, tok)
			}
		})
	}
}

// A secret listed as previous still verifies old cookies; new ones are signed with the
// current secret, which a keyring that only knows the old one rejects.
func TestTokenSecretRotation(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old := newKeyring("shop", [][]byte{[]byte("old")})
	rotated := newKeyring("shop", [][]byte{[]byte("new"), []byte("old")})
	tok := token{state: Admitted, id: NewVisitorID(), expires: now.Add(time.Minute)}
	if _, ok := rotated.open(old.seal(tok), now); !ok {
		t.Fatal("cookie signed with the previous secret was rejected during rotation")
	}
	if _, ok := old.open(rotated.seal(tok), now); ok {
		t.Fatal("cookie signed with the new secret verified under the old one alone")
	}
}

func TestVisitorIDsAreRandomAndParse(t *testing.T) {
	seen := make(map[VisitorID]bool)
	for i := 0; i < 1000; i++ {
		id := NewVisitorID()
		if seen[id] {
			t.Fatal("duplicate visitor id")
		}
		seen[id] = true
		back, err := ParseVisitorID(id.String())
		if err != nil || back != id {
			t.Fatalf("parse %s: %v %v", id, back, err)
		}
	}
	for _, bad := range []string{"", "xyz", "0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abcdef00"} {
		if _, err := ParseVisitorID(bad); err == nil {
			t.Errorf("ParseVisitorID(%q) accepted", bad)
		}
	}
}

func BenchmarkTokenOpen(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	k := newKeyring("shop", [][]byte{[]byte("secret-one")})
	v := k.seal(token{state: Admitted, id: NewVisitorID(), expires: now.Add(time.Minute)})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := k.open(v, now); !ok {
				b.Fatal("rejected")
			}
		}
	})
}
