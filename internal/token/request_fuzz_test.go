package token

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// The proof parameter comes in an address the client writes. Taking it out must leave
// every other parameter as it came, in order, and no proof parameter behind; what is
// taken must be what the first proof parameter said.
func FuzzTakeProof(f *testing.F) {
	for _, q := range []string{
		"", "a=1", "waiting_room_proof=x:1", "a=1&waiting_room_proof=Q%3A1&b=2", "waiting_room_proof",
		"waiting_room_proof=&waiting_room_proof=2", "waiting_room_proofx=1&xwaiting_room_proof=2", "&&waiting_room_proof=%zz&",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, query string) {
		if strings.ContainsAny(query, "# \t\r\n") {
			return // not a query an HTTP request line carries
		}
		r := httptest.NewRequest("GET", "http://shop.example/", nil)
		r.URL.RawQuery = query
		sent := TakeProof(r)
		var kept, want []string
		first := true
		for _, part := range strings.Split(query, "&") {
			key, _, _ := strings.Cut(part, "=")
			if key == ProofParam {
				if first && !sent.InQuery {
					t.Fatalf("%q: the proof parameter was not seen", query)
				}
				first = false
				continue
			}
			want = append(want, part)
		}
		if r.URL.RawQuery != "" || len(want) > 0 {
			kept = strings.Split(r.URL.RawQuery, "&")
		}
		for _, part := range kept {
			if key, _, _ := strings.Cut(part, "="); key == ProofParam {
				t.Fatalf("%q: the proof parameter is still in %q", query, r.URL.RawQuery)
			}
		}
		if !strings.Contains(query, ProofParam) {
			if r.URL.RawQuery != query {
				t.Fatalf("%q without a proof became %q", query, r.URL.RawQuery)
			}
			return
		}
		if !slices.Equal(kept, want) {
			t.Fatalf("%q: kept %q, want %q", query, kept, want)
		}
	})
}
