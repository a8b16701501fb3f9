package token

import (
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testalloc"
)

// The fuzz targets of this package. Each has a seed corpus under testdata/fuzz/<name>/,
// which plain `go test` runs as regression tests; `go test -fuzz` explores from there.

var (
	fuzzNow    = time.Unix(1_800_000_000, 0)
	fuzzSecret = []byte("fuzz-secret")
)

// A cookie value is what a client controls completely. open must accept exactly the
// values seal writes under this room and secret, and must not do more work for a long
// value than for a short one.
func FuzzTokenOpen(f *testing.F) {
	k := NewKeyring("shop", [][]byte{fuzzSecret})
	otherRoom := NewKeyring("shop2", [][]byte{fuzzSecret})
	otherSecret := NewKeyring("shop", [][]byte{[]byte("fuzz-secret2")})
	id := queue.VisitorID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, tok := range []Token{
		{State: queue.Queued, ID: id, Since: fuzzNow.Add(-time.Minute), Expires: fuzzNow.Add(QueuedLife)},
		{State: queue.Admitted, ID: id, Since: fuzzNow, Expires: fuzzNow.Add(time.Minute)},
	} {
		f.Add(k.Seal(tok))
	}
	f.Add("")
	f.Add("not a cookie")

	f.Fuzz(func(t *testing.T, value string) {
		tok, ok := k.Open(value, fuzzNow)
		// A value of the right length is decoded and MACed (a few allocations); any
		// other is refused before either. Never more, however long the value.
		if !testalloc.Race {
			if allocs := testing.AllocsPerRun(1, func() { k.Open(value, fuzzNow) }); allocs > 4 {
				t.Errorf("open of a %d-byte value made %v allocations", len(value), allocs)
			}
		}
		if !ok {
			return
		}
		sealed := k.Seal(tok)
		if len(value) == v1Text {
			sealed = k.sealV1(tok)
		}
		if sealed != value {
			t.Fatalf("open accepted %q, which seal never writes (it writes %q for that token)", value, sealed)
		}
		if !fuzzNow.Before(tok.Expires) || (tok.State != queue.Queued && tok.State != queue.Admitted) {
			t.Fatalf("open accepted an expired or stateless token %+v", tok)
		}
		if _, ok := otherRoom.Open(value, fuzzNow); ok {
			t.Fatalf("a cookie of room shop opened in room shop2: %q", value)
		}
		if _, ok := otherSecret.Open(value, fuzzNow); ok {
			t.Fatalf("a cookie opened under a secret it was not signed with: %q", value)
		}
	})
}

// Every token the server can write reads back as itself until it expires, and never in
// another room.
func FuzzTokenRoundTrip(f *testing.F) {
	k := NewKeyring("shop", [][]byte{fuzzSecret, []byte("previous")})
	f.Add(uint8(queue.Admitted), []byte("0123456789abcdef"), int64(-60), int64(60))
	f.Add(uint8(queue.Queued), []byte{}, int64(0), int64(0))
	f.Add(uint8(0), []byte{0xff}, int64(-1<<62), int64(1<<62))
	f.Fuzz(func(t *testing.T, state uint8, rawID []byte, since, expires int64) {
		in := Token{State: queue.State(state), Since: time.Unix(since, 0), Expires: time.Unix(expires, 0),
			Pass: since&1 == 1, Waited: time.Duration(expires%100_000) * time.Second}
		if in.Waited < 0 {
			in.Waited = -1
		}
		copy(in.ID[:], rawID)
		out, ok := k.Open(k.Seal(in), fuzzNow)
		valid := (in.State == queue.Queued || in.State == queue.Admitted) && fuzzNow.Before(in.Expires)
		if ok != valid {
			t.Fatalf("token %+v: open says %v, want %v", in, ok, valid)
		}
		if ok && (out.State != in.State || out.ID != in.ID || !out.Since.Equal(in.Since) || !out.Expires.Equal(in.Expires) ||
			out.Pass != in.Pass || out.Waited != in.Waited) {
			t.Fatalf("token %+v read back as %+v", in, out)
		}
	})
}
