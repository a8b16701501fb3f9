package waitingroom

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// solveProof finds a nonce for challenge at difficulty, as the page does.
func solveProof(t testing.TB, challenge string, difficulty int) string {
	t.Helper()
	for n := 0; n < 1<<26; n++ {
		proof := challenge + ":" + strconv.Itoa(n)
		if sum := sha256.Sum256([]byte(proof)); token.LeadingZeroBits(sum[:]) >= difficulty {
			return proof
		}
	}
	t.Fatal("no nonce found")
	return ""
}

// proofVisit is one request: target (path and query), header proof (or ""), Accept.
type proofVisit struct {
	target, proof, accept, cookie string
	method                        string
	requestTarget                 string // the whole request-target, instead of the site's target
}

// proofAnswer is what the room answered, and what the upstream saw if it got it.
type proofAnswer struct {
	w        *httptest.ResponseRecorder
	cookie   string
	upstream *http.Request
	body     map[string]any
	status   string // {http.waiting_room.status}
}

func (tr *testRoom) proofVisit(pv proofVisit) proofAnswer {
	tr.t.Helper()
	method := pv.method
	if method == "" {
		method = http.MethodGet
	}
	target := "http://shop.example" + pv.target
	if pv.requestTarget != "" {
		target = pv.requestTarget
	}
	r := httptest.NewRequest(method, target, nil)
	repl := caddy.NewReplacer()
	orig := *r
	u := *r.URL
	orig.URL = &u
	ctx := context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl)
	ctx = context.WithValue(ctx, caddyhttp.OriginalRequestCtxKey, orig)
	r = r.WithContext(ctx)
	if pv.proof != "" {
		r.Header.Set("Waiting-Room-Proof", pv.proof)
	}
	if pv.accept != "" {
		r.Header.Set("Accept", pv.accept)
	}
	if pv.cookie != "" {
		r.Header.Set("Cookie", tr.h.Cookie.Name+"="+pv.cookie)
	}
	var a proofAnswer
	a.w = httptest.NewRecorder()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		a.upstream = r
		_, err := w.Write([]byte("upstream"))
		return err
	})
	if err := tr.h.ServeHTTP(a.w, r, next); err != nil {
		tr.t.Fatal(err)
	}
	for _, c := range a.w.Result().Cookies() {
		if c.Name == tr.h.Cookie.Name {
			a.cookie = c.Value
		}
	}
	if strings.HasPrefix(a.w.Header().Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(a.w.Body.Bytes(), &a.body)
	}
	a.status, _ = repl.GetString("http.waiting_room.status")
	return a
}

// challengeOf asks as a new API client and returns the challenge it is given.
func (tr *testRoom) challengeOf() (string, int) {
	tr.t.Helper()
	a := tr.proofVisit(proofVisit{target: "/tickets", accept: "application/json"})
	if a.body["status"] != "challenge" {
		tr.t.Fatalf("new visitor got %d %s, want a challenge", a.w.Code, a.w.Body)
	}
	return a.body["challenge"].(string), int(a.body["difficulty"].(float64))
}

func newProofRoom(t *testing.T, capacity, bits int) *testRoom {
	return newTestRoomWith(t, capacity, func(h *Handler) {
		h.ProofOfWork = bits
		h.StatusCode = http.StatusAccepted
	})
}

func TestNewVisitorGetsAChallengeNotAPlace(t *testing.T) {
	tr := newProofRoom(t, 1, 8)
	a := tr.proofVisit(proofVisit{target: "/tickets", accept: "application/json"})
	if a.w.Code != http.StatusAccepted || a.body["status"] != "challenge" || a.body["room"] != tr.h.Name ||
		a.body["difficulty"] != 8.0 || len(a.body["challenge"].(string)) != token.ChallengeText || len(a.body) != 4 {
		t.Fatalf("JSON challenge = %d %s", a.w.Code, a.w.Body)
	}
	if a.cookie != "" || a.upstream != nil || a.status != "challenge" {
		t.Fatalf("a challenge set cookie %q, reached upstream %v, placeholder %q", a.cookie, a.upstream != nil, a.status)
	}
	if st, _ := tr.h.store.Stats(context.Background()); st.Active != 0 || st.Waiting != 0 {
		t.Fatalf("a challenge took a place: %+v", st)
	}
	page := tr.proofVisit(proofVisit{target: "/tickets", accept: "text/html"})
	if page.w.Code != http.StatusAccepted || !strings.Contains(page.w.Body.String(), `data-difficulty="8"`) ||
		page.w.Header().Get("Cache-Control") != "no-store" || !strings.Contains(page.w.Header().Get("Content-Security-Policy"), "script-src 'nonce-") {
		t.Fatalf("challenge page = %d %v %.200s", page.w.Code, page.w.Header(), page.w.Body)
	}
}

func TestValidProofJoinsOnceAndOnlyOnce(t *testing.T) {
	tr := newProofRoom(t, 1, 8)
	c, bits := tr.challengeOf()
	proof := solveProof(t, c, bits)
	a := tr.proofVisit(proofVisit{target: "/tickets", proof: proof, accept: "application/json"})
	if a.upstream == nil || a.cookie == "" || a.status != "admitted" {
		t.Fatalf("valid proof: %d %s, placeholder %q", a.w.Code, a.w.Body, a.status)
	}
	if a.upstream.Header.Get("Waiting-Room-Proof") != "" {
		t.Fatal("the proof header reached the upstream")
	}
	// The admitted visitor's cookie is enough from now on.
	if again := tr.proofVisit(proofVisit{target: "/tickets", cookie: a.cookie, accept: "application/json"}); again.upstream == nil {
		t.Fatalf("admitted visitor challenged: %s", again.w.Body)
	}
	// The same proof again, without the cookie: a fresh challenge, never a place.
	replay := tr.proofVisit(proofVisit{target: "/tickets", proof: proof, accept: "application/json"})
	if replay.body["status"] != "challenge" || replay.body["challenge"] == c || replay.cookie != "" {
		t.Fatalf("replayed proof: %d %s", replay.w.Code, replay.w.Body)
	}
	// A second fresh proof queues behind the first visitor, as an ordinary new visitor.
	c2, _ := tr.challengeOf()
	q := tr.proofVisit(proofVisit{target: "/tickets", proof: solveProof(t, c2, bits), accept: "application/json"})
	if q.body["status"] != "queued" || q.body["position"] != 1.0 || q.cookie == "" {
		t.Fatalf("second valid proof: %d %s", q.w.Code, q.w.Body)
	}
}

func TestBadProofsGetAFreshChallenge(t *testing.T) {
	tr := newProofRoom(t, 5, 8)
	c, bits := tr.challengeOf()
	other := newProofRoom(t, 5, 8)
	foreign, _ := other.challengeOf()
	weak := newProofRoom(t, 5, 4)
	easy, _ := weak.challengeOf()
	short := c
	for n := 0; ; n++ {
		p := c + ":" + strconv.Itoa(n)
		if sum := sha256.Sum256([]byte(p)); token.LeadingZeroBits(sum[:]) < bits {
			short = p
			break
		}
	}
	good := solveProof(t, c, bits)
	for _, tc := range []struct{ name, proof string }{
		{"too little work", short},
		{"another room's challenge", solveProof(t, foreign, bits)},
		{"an easier room's challenge", solveProof(t, easy, 4)},
		{"garbage", "not a proof"},
		{"oversized", strings.Repeat("A", 1<<16)},
		{"nonce with a bad character", c + ":a b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tr.proofVisit(proofVisit{target: "/tickets", proof: tc.proof, accept: "application/json"})
			if a.body["status"] != "challenge" || a.cookie != "" || a.upstream != nil {
				t.Fatalf("%d %s", a.w.Code, a.w.Body)
			}
		})
	}
	t.Run("expired", func(t *testing.T) {
		tr.clock.Advance(token.ChallengeLife)
		a := tr.proofVisit(proofVisit{target: "/tickets", proof: good, accept: "application/json"})
		if a.body["status"] != "challenge" || a.cookie != "" {
			t.Fatalf("%d %s", a.w.Code, a.w.Body)
		}
	})
	if st, _ := tr.h.store.Stats(context.Background()); st.Active != 0 || st.Waiting != 0 {
		t.Fatalf("a bad proof took a place: %+v", st)
	}
}

// A proof in the address: the browser is sent back to the address without it once
// it has its cookie; an API client goes on, and the upstream never sees it.
func TestProofInTheAddressIsStripped(t *testing.T) {
	tr := newProofRoom(t, 1, 8)
	c, bits := tr.challengeOf()
	q := url.QueryEscape(solveProof(t, c, bits))
	a := tr.proofVisit(proofVisit{target: "/tickets?a=1&waiting_room_proof=" + q + "&b=2", accept: "text/html"})
	if a.w.Code != http.StatusSeeOther || a.w.Header().Get("Location") != "/tickets?a=1&b=2" || a.cookie == "" || a.upstream != nil {
		t.Fatalf("browser with a proof in the address: %d, Location %q, cookie %q", a.w.Code, a.w.Header().Get("Location"), a.cookie)
	}
	c2, _ := tr.challengeOf()
	api := tr.proofVisit(proofVisit{target: "/tickets?waiting_room_proof=" + url.QueryEscape(solveProof(t, c2, bits)) + "&b=2", accept: "application/json"})
	if api.body["status"] != "queued" || api.cookie == "" {
		t.Fatalf("API client with a proof in the address: %d %s", api.w.Code, api.w.Body)
	}
	// An admitted visitor's request with a stale proof in it: the upstream gets the
	// address without it.
	pass := tr.proofVisit(proofVisit{target: "/tickets?waiting_room_proof=" + q + "&b=2", cookie: a.cookie})
	if pass.upstream == nil || pass.upstream.URL.RawQuery != "b=2" || !strings.HasSuffix(pass.upstream.RequestURI, "/tickets?b=2") { // the request line's form is kept
		t.Fatalf("upstream saw %v", pass.upstream)
	}
}

func TestProofOfWorkIsLiveSettable(t *testing.T) {
	tr := newTestRoom(t, 5)
	ctl := tr.h.room
	ctx := context.Background()
	if a := tr.proofVisit(proofVisit{target: "/", accept: "application/json"}); a.upstream == nil {
		t.Fatalf("proof_of_work off, yet %s", a.w.Body)
	}
	for _, bad := range []string{`{"proof_of_work": 33}`, `{"proof_of_work": -1}`, `{"proof_of_work": "16"}`, `{"proof_of_work": 1.5}`} {
		_, err := ctl.Patch(ctx, []byte(bad))
		var input room.InputError // the admin API answers it 400
		if !errors.As(err, &input) || !strings.Contains(err.Error(), "proof_of_work") {
			t.Fatalf("PATCH %s: %v, want the caller's error naming proof_of_work", bad, err)
		}
	}
	info, err := ctl.Patch(ctx, []byte(`{"proof_of_work": 6}`))
	if err != nil || info.ProofOfWork != 6 {
		t.Fatalf("PATCH 6: %+v, %v", info, err)
	}
	if c, bits := tr.challengeOf(); bits != 6 || c == "" {
		t.Fatalf("after PATCH the challenge is of %d bits", bits)
	}
	info, err = ctl.Patch(ctx, []byte(`{"proof_of_work": null}`))
	if err != nil || info.ProofOfWork != 0 {
		t.Fatalf("PATCH null: %+v, %v", info, err)
	}
	if a := tr.proofVisit(proofVisit{target: "/", accept: "application/json"}); a.upstream == nil {
		t.Fatalf("proof_of_work restored to off, yet %s", a.w.Body)
	}
}

func TestProofOfWorkCaddyfile(t *testing.T) {
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("waiting_room {\n name a\n capacity 1\n proof_of_work 16\n}")); err != nil || h.ProofOfWork != 16 {
		t.Fatalf("proof_of_work 16: %v, %d", err, h.ProofOfWork)
	}
	for _, in := range []string{"33", "-1", "sixteen", "16 17", ""} {
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("waiting_room {\n name a\n capacity 1\n proof_of_work " + in + "\n}"))
		if err == nil || !strings.HasSuffix(err.Error(), ", at Testfile:4") {
			t.Errorf("proof_of_work %q: %v, want an error on line 4", in, err)
		}
	}
	bad := Handler{Name: "a", Capacity: 1, ProofOfWork: 40}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "proof_of_work") {
		t.Errorf("JSON proof_of_work 40: %v", err)
	}
}

// BenchmarkTakeProofAbsent is what proof_of_work adds to every admitted request: a
// request without a proof, as nearly all are.
func BenchmarkTakeProofAbsent(b *testing.B) {
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets/42?seat=A12&ref=mail", nil)
	r.Header.Set("Cookie", "waiting_room_drop=x")
	b.ReportAllocs()
	for b.Loop() {
		if token.TakeProof(r).Text != "" {
			b.Fatal("a proof in a request without one")
		}
	}
}
