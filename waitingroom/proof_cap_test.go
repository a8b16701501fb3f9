package waitingroom

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// proofFrom is a new API client's request from addr, with proof in the header (or
// none), answered as Caddy answers a 429. It returns the code and the JSON status.
func (tr *testRoom) proofFrom(addr, proof string) (int, string) {
	tr.t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
	r.RemoteAddr = addr + ":40000"
	r.Header.Set("Accept", "application/json")
	if proof != "" {
		r.Header.Set("Waiting-Room-Proof", proof)
	}
	w := httptest.NewRecorder()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		_, err := w.Write([]byte(`{"status":"upstream"}`))
		return err
	})
	if err := serveAsCaddy(tr.h, w, r, next); err != nil {
		tr.t.Fatal(err)
	}
	var body struct{ Status string }
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	return w.Code, body.Status
}

func newCappedProofRoom(t *testing.T, maxJoins int) *testRoom {
	return newTestRoomWith(t, 1, func(h *Handler) {
		h.ProofOfWork = 8
		h.StatusCode = http.StatusAccepted
		h.PerIP = &PerIP{MaxJoins: maxJoins, JoinWindow: caddy.Duration(time.Minute)}
	})
}

// An address over its per-address cap is refused before its proof is checked against
// the once-only table: the 429 leaves the proof unspent, so the visitor who solved it
// joins with it once the window has passed: none of the five refusals spent it.
func TestProofRefusedByTheCapIsNotSpent(t *testing.T) {
	tr := newCappedProofRoom(t, 1)
	const addr = "203.0.113.7"
	c, bits := tr.challengeOf()
	if code, status := tr.proofFrom(addr, solveProof(t, c, bits)); status != "upstream" {
		t.Fatalf("the address's first proof: %d %q, want admitted", code, status)
	}
	c, _ = tr.challengeOf()
	proof := solveProof(t, c, bits)
	for i := range 5 {
		if code, _ := tr.proofFrom(addr, proof); code != http.StatusTooManyRequests {
			t.Fatalf("proof %d over the cap: %d, want 429", i+1, code)
		}
	}
	tr.clock.Advance(time.Minute) // the window ends; the challenge still lives
	if code, status := tr.proofFrom(addr, proof); status != "queued" {
		t.Fatalf("the refused proof after the window: %d %q, want queued (the proof was not spent)", code, status)
	}
}

// A visitor who is challenged has not joined, so it does not count against its
// address's cap: an address may be challenged (no proof, a bad one, a replayed one)
// any number of times and still join max_joins times with proofs.
func TestChallengedVisitorIsNotCountedAsAJoin(t *testing.T) {
	tr := newCappedProofRoom(t, 2)
	const addr = "203.0.113.8"
	c, bits := tr.challengeOf()
	spent := solveProof(t, c, bits)
	if _, status := tr.proofFrom("198.51.100.1", spent); status != "upstream" {
		t.Fatalf("another address's proof: %q, want admitted", status)
	}
	for i, proof := range []string{"", "", "not a proof", spent, spent} {
		if code, status := tr.proofFrom(addr, proof); code != http.StatusAccepted || status != "challenge" {
			t.Fatalf("request %d without a usable proof: %d %q, want a challenge", i+1, code, status)
		}
	}
	for i := range 2 {
		c, _ := tr.challengeOf()
		if code, status := tr.proofFrom(addr, solveProof(t, c, bits)); status != "queued" {
			t.Fatalf("join %d of 2 after five challenges: %d %q, want queued", i+1, code, status)
		}
	}
	c, _ = tr.challengeOf()
	if code, _ := tr.proofFrom(addr, solveProof(t, c, bits)); code != http.StatusTooManyRequests {
		t.Fatalf("a third join in the window: %d, want 429", code)
	}
	if st, _ := tr.h.store.Stats(context.Background()); st.Active != 1 || st.Waiting != 2 {
		t.Fatalf("the room holds %+v, want the other address admitted and two waiting", st)
	}
}
