package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// docSecret, docRoom and docPass are the worked example of docs/passes.md: if this
// test changes, so does the page.
const (
	docSecret = "correct horse battery staple"
	docRoom   = "shop"
	docPass   = "AQABAgMEBQYHaGpJIAADzdnE5KVJKtqWU6hqWU6KBA"
)

var docExpires = time.Date(2025, time.July, 6, 10, 0, 0, 0, time.UTC) // 1751796000

// mintLikeTheDocs follows docs/passes.md's recipe step by step with the standard
// library alone, as an operator's backend would, without this package's code.
func mintLikeTheDocs(secret, room string, id [8]byte, expires time.Time, uses uint16) string {
	body := []byte{1}
	body = append(body, id[:]...)
	body = binary.BigEndian.AppendUint32(body, uint32(expires.Unix()))
	body = binary.BigEndian.AppendUint16(body, uses)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("waiting_room_pass\x00" + room + "\x00"))
	m.Write(body)
	return base64.RawURLEncoding.EncodeToString(append(body, m.Sum(nil)[:16]...))
}

func TestDocumentedRecipeMintsAcceptedPasses(t *testing.T) {
	id := [8]byte{0, 1, 2, 3, 4, 5, 6, 7}
	got := mintLikeTheDocs(docSecret, docRoom, id, docExpires, 3)
	if got != docPass {
		t.Fatalf("the recipe gives %q, docs/passes.md shows %q", got, docPass)
	}
	k := NewKeyring(docRoom, [][]byte{[]byte(docSecret)})
	p, ok := k.OpenPass(got, docExpires.Add(-time.Hour))
	if !ok || p.ID != id || p.Uses != 3 || !p.Expires.Equal(docExpires) {
		t.Fatalf("the room read the documented pass as %+v, %v", p, ok)
	}
	if minted := k.MintPass(Pass{ID: id, Expires: docExpires, Uses: 3}); minted != got {
		t.Fatalf("the room mints %q for the same pass, the recipe %q", minted, got)
	}
	if len(got) > 48 {
		t.Fatalf("a pass is %d characters, more than a link should carry", len(got))
	}
}

func TestPassIsRefused(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := NewKeyring("shop", [][]byte{[]byte("new"), []byte("old")})
	good := k.MintPass(NewPass(now.Add(time.Hour), 2))
	if _, ok := k.OpenPass(good, now); !ok {
		t.Fatal("a fresh pass was refused")
	}
	old := NewKeyring("shop", [][]byte{[]byte("old")}).MintPass(NewPass(now.Add(time.Hour), 1))
	if _, ok := k.OpenPass(old, now); !ok {
		t.Fatal("a pass signed with the previous secret was refused")
	}
	flipped := []byte(good)
	flipped[20] ^= 1
	for _, c := range []struct{ what, pass string }{
		{"expired", k.MintPass(NewPass(now, 1))},
		{"with no uses", k.MintPass(NewPass(now.Add(time.Hour), 0))},
		{"of another room", NewKeyring("shop2", [][]byte{[]byte("new")}).MintPass(NewPass(now.Add(time.Hour), 1))},
		{"under another secret", NewKeyring("shop", [][]byte{[]byte("other")}).MintPass(NewPass(now.Add(time.Hour), 1))},
		{"with a character changed", string(flipped)},
		{"oversized", good + strings.Repeat("A", 10_000)},
		{"truncated", good[:len(good)-1]},
		{"padded", good + "=="},
		{"empty", ""},
		{"a cookie", k.Seal(Token{Expires: now.Add(time.Hour)})},
	} {
		if p, ok := k.OpenPass(c.pass, now); ok {
			t.Errorf("a pass %s was accepted: %+v", c.what, p)
		}
	}
}

// A pass is what a client controls completely: OpenPass accepts exactly what
// MintPass writes for this room, never a pass of another room, never an expired one.
func FuzzPassOpen(f *testing.F) {
	k := NewKeyring("shop", [][]byte{fuzzSecret})
	other := NewKeyring("shop2", [][]byte{fuzzSecret})
	f.Add(k.MintPass(NewPass(fuzzNow.Add(time.Hour), 1)))
	f.Add(k.MintPass(NewPass(fuzzNow.Add(time.Hour), MaxPassUses)))
	f.Add(docPass)
	f.Add("")
	f.Add(strings.Repeat("A", PassText))
	f.Fuzz(func(t *testing.T, value string) {
		p, ok := k.OpenPass(value, fuzzNow)
		if !ok {
			return
		}
		if minted := k.MintPass(p); minted != value {
			t.Fatalf("OpenPass accepted %q, which MintPass never writes (it writes %q)", value, minted)
		}
		if p.Uses < 1 || !fuzzNow.Before(p.Expires) {
			t.Fatalf("accepted a pass with no uses or expired: %+v", p)
		}
		if _, ok := other.OpenPass(value, fuzzNow); ok {
			t.Fatalf("a pass of room shop opened in room shop2: %q", value)
		}
	})
}

// How long verifying a pass takes (one HMAC-SHA256): the figure docs/passes.md gives.
func BenchmarkOpenPass(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	k := NewKeyring("shop", [][]byte{[]byte("secret")})
	pass := k.MintPass(NewPass(now.Add(time.Hour), 1))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := k.OpenPass(pass, now); !ok {
			b.Fatal("refused")
		}
	}
}
