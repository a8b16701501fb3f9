package token

import (
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// TestHandoffIsRefused holds that a hand-off code opens only as minted, in its room,
// under one of the room's secrets, before it expires, and that every other value
// (cut, grown, flipped, another room's, another secret's, expired) is refused.
func TestHandoffIsRefused(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := NewKeyring("shop", [][]byte{[]byte("new"), []byte("old")})
	id := queue.NewVisitorID()
	h := NewHandoff(id, now.Add(-time.Minute), now, true, false)
	good := k.MintHandoff(h)
	if len(good) != HandoffText {
		t.Fatalf("a code is %d characters, HandoffText says %d", len(good), HandoffText)
	}
	got, ok := k.OpenHandoff(good, now)
	if !ok || got.ID != id || got.Nonce != h.Nonce || !got.Pass || got.Keyed ||
		!got.Since.Equal(now.Add(-time.Minute)) || !got.Expires.Equal(now.Add(HandoffLife)) {
		t.Fatalf("a fresh code opened as %+v, %v", got, ok)
	}
	if _, ok := NewKeyring("shop", [][]byte{[]byte("newer"), []byte("new")}).OpenHandoff(good, now); !ok {
		t.Fatal("a code signed with a secret still on the ring was refused")
	}
	flip := []byte(good)
	flip[10] ^= 1
	flipLast := []byte(good)
	flipLast[len(flipLast)-1] = 'A' + (flipLast[len(flipLast)-1]-'A'+1)%26
	bad := map[string]string{
		"empty":          "",
		"cut":            good[:len(good)-1],
		"grown":          good + "A",
		"huge":           strings.Repeat("A", 1<<16),
		"flipped":        string(flip),
		"last changed":   string(flipLast),
		"line break":     good[:20] + "\n" + good[21:],
		"other room":     NewKeyring("other", [][]byte{[]byte("new")}).MintHandoff(h),
		"other secret":   NewKeyring("shop", [][]byte{[]byte("stranger")}).MintHandoff(h),
		"a pass":         k.MintPass(NewPass(now.Add(time.Hour), 1)),
		"a cookie":       k.Seal(Token{State: queue.Queued, ID: id, Since: now, Expires: now.Add(time.Hour)}),
		"standard b64":   strings.NewReplacer("-", "+", "_", "/").Replace(withURLChars(t, k, id, now)),
		"plus":           good[:10] + "+" + good[11:],
		"slash":          good[:10] + "/" + good[11:],
		"non-ascii junk": strings.Repeat("é", HandoffText/2) + "A",
	}
	for name, v := range bad {
		if _, ok := k.OpenHandoff(v, now); ok {
			t.Errorf("%s: opened", name)
		}
	}
	if _, ok := k.OpenHandoff(good, now.Add(HandoffLife)); ok {
		t.Error("a code opened at its expiry")
	}
	if _, ok := k.OpenHandoff(good, now.Add(HandoffLife-time.Second)); !ok {
		t.Error("a code was refused a second before its expiry")
	}
}

// withURLChars mints codes for id until one has a character of base64url's own (- or
// _), whose standard-alphabet spelling is then another string: a code without one
// reads the same in both alphabets, and about one code in five has neither.
func withURLChars(t *testing.T, k *Keyring, id queue.VisitorID, now time.Time) string {
	t.Helper()
	for range 100 {
		if c := k.MintHandoff(NewHandoff(id, now, now, false, false)); strings.ContainsAny(c, "-_") {
			return c
		}
	}
	t.Fatal("100 codes without - or _")
	return ""
}

func TestHandoffKeepsKeyedAndNonces(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := NewKeyring("shop", [][]byte{[]byte("s")})
	id := queue.NewVisitorID()
	a, b := NewHandoff(id, now, now, false, true), NewHandoff(id, now, now, false, true)
	if a.Nonce == b.Nonce {
		t.Fatal("two codes for one place share a nonce: the second could never be used")
	}
	got, ok := k.OpenHandoff(k.MintHandoff(a), now)
	if !ok || !got.Keyed || got.Pass {
		t.Fatalf("a keyed code opened as %+v, %v", got, ok)
	}
}
