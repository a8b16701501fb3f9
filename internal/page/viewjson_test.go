package page

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
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
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("view %+v:\n got %s\nwant %s", v, got, want)
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
