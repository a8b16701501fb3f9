package token

import (
	"encoding/base64"
	"encoding/binary"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// sealV1 writes t as version 1 cookies were written, before the flags and the wait.
func (k *Keyring) sealV1(t Token) string {
	var raw [v1Len]byte
	raw[0] = 1
	raw[1] = byte(t.State)
	copy(raw[2:18], t.ID[:])
	binary.BigEndian.PutUint64(raw[18:26], uint64(t.Since.Unix()))
	binary.BigEndian.PutUint64(raw[26:34], uint64(t.Expires.Unix()))
	k.sum(0, raw[:v1Body], raw[v1Body:v1Body])
	return base64.RawURLEncoding.EncodeToString(raw[:])
}

// A cookie given out before the upgrade keeps working: the same visitor, state and
// times, and a wait that is not known (not a wait of 0).
func TestVersion1CookiesStayAccepted(t *testing.T) {
	k := NewKeyring("shop", [][]byte{[]byte("s")})
	now := time.Unix(1_800_000_000, 0)
	in := Token{State: queue.Admitted, ID: queue.NewVisitorID(), Since: now.Add(-time.Minute), Expires: now.Add(time.Minute)}
	out, ok := k.Open(k.sealV1(in), now)
	if !ok || out.ID != in.ID || out.State != in.State || !out.Since.Equal(in.Since) || out.Pass || out.Waited >= 0 {
		t.Fatalf("version 1 cookie opened as %+v, %v; want %+v with an unknown wait", out, ok, in)
	}
	if _, ok := NewKeyring("shop2", [][]byte{[]byte("s")}).Open(k.sealV1(in), now); ok {
		t.Fatal("a version 1 cookie opened in another room")
	}
}

// Version 2 carries the pass flag and the wait; a flag this version does not know is
// a forgery, not a visitor.
func TestVersion2CarriesPassAndWait(t *testing.T) {
	k := NewKeyring("shop", [][]byte{[]byte("s")})
	now := time.Unix(1_800_000_000, 0)
	for _, in := range []Token{
		{State: queue.Admitted, ID: queue.NewVisitorID(), Since: now, Expires: now.Add(time.Minute), Pass: true, Waited: 754 * time.Second},
		{State: queue.Admitted, ID: queue.NewVisitorID(), Since: now, Expires: now.Add(time.Minute), Waited: 0},
		{State: queue.Queued, ID: queue.NewVisitorID(), Since: now, Expires: now.Add(time.Minute), Pass: true, Waited: -1},
	} {
		out, ok := k.Open(k.Seal(in), now)
		if !ok || out != in {
			t.Errorf("sealed %+v, opened %+v, %v", in, out, ok)
		}
	}
}
