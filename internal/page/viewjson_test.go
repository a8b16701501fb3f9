package page

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
)

// The hand-written encoding is encoding/json's, byte for byte, for every shape of
// view and every kind of room name.
func TestViewJSONIsEncodingJSONs(t *testing.T) {
	rooms := []string{"", "shop", "티켓 판매", "a\"b\\c", "<script>&amp;</script>", "line\u2028para\u2029",
		"\x00\x01\b\f\n\r\t\x1f\x7f", "bad\xffutf8\xc3", "emoji 🎟️", "ünïcode"}
	rng := rand.New(rand.NewPCG(3, 4))
	num := func() int { return []int{0, 1, 7, 1000, 1 << 40, -3}[rng.IntN(6)] }
	for i := range 2000 {
		v := View{Room: rooms[i%len(rooms)], Status: []string{"queued", "rejected", "unavailable"}[rng.IntN(3)],
			Position: num(), Waiting: num(), Active: num(), Capacity: num(), RefreshSeconds: num()}
		if rng.IntN(2) == 0 {
			v.Type = "position"
		}
		if rng.IntN(2) == 0 {
			eta := num()
			v.ETASeconds = &eta
		}
		if rng.IntN(2) == 0 {
			starts := num()
			v.StartsInSeconds = &starts
		}
		v.AwayTTLSeconds = num()
		v.Returned = rng.IntN(2) == 0
		if rng.IntN(2) == 0 {
			v.Reason = "session_max"
		}
		if rng.IntN(2) == 0 {
			v.DrawURL = "/.well-known/waiting-room/" + v.Room + "/fifo"
		}
		if signer, err := draw.NewSigner(v.Room, []byte("a secret of 32 bytes or more, for the test")); err == nil && rng.IntN(2) == 0 {
			r, err := signer.Sign(draw.Receipt{Room: v.Room, Draw: draw.FIFO, Entry: draw.NewEntry(), Ticket: uint64(i), Issued: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if v.Receipt, err = r.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got := v.AppendJSON(nil)
		if len(v.Receipt) == 0 {
			if !bytes.Equal(got, want) {
				t.Fatalf("view %+v:\n got %s\nwant %s", v, got, want)
			}
			continue
		}
		// encoding/json escapes a raw message's <, > & and U+2028 again; the view
		// carries the receipt as signed, which a verifier reads alike.
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil || json.Unmarshal(want, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("view %+v:\n got %s\nwant %s (%v)", v, got, want, err)
		}
		if !bytes.Contains(got, append([]byte(`"receipt":`), v.Receipt...)) {
			t.Fatalf("the view's receipt is not the signed bytes: %s", got)
		}
	}
	for s := range 1 << 16 { // every one- and two-byte string
		str := string([]byte{byte(s >> 8), byte(s)})
		want, _ := json.Marshal(str)
		if got := appendJSONString(nil, str); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", str, got, want)
		}
	}
}
