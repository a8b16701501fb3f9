package waitingroom

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// passVisit makes one JSON request to target with the pass given in the header (when
// header is set) and the cookie, and returns the answer, the cookie and what the
// upstream saw (nil when it saw nothing).
func (tr *testRoom) passVisit(target, header, cookie string) (*httptest.ResponseRecorder, string, *http.Request) {
	tr.t.Helper()
	headers := []string{"Accept", "application/json"}
	if header != "" {
		headers = append(headers, token.PassHeader, header)
	}
	return tr.requestWith(target, cookie, headers...)
}

func (tr *testRoom) mint(uses int) string {
	tr.t.Helper()
	passes, _, err := tr.h.room.MintPasses(context.Background(), 1, time.Hour, uses)
	if err != nil {
		tr.t.Fatal(err)
	}
	return passes[0]
}

func viewOf(t *testing.T, w *httptest.ResponseRecorder) page.View {
	t.Helper()
	var v page.View
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("not a JSON answer: %d %q", w.Code, w.Body.String())
	}
	return v
}

// A pass in the link puts its holder ahead of everyone waiting; the cookie carries
// it from then on, the upstream never sees it, and a used-up pass makes an ordinary
// newcomer told "pass":"invalid".
func TestPassSkipsTheLine(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	admitted, _ := tr.fill(3)
	pass := tr.mint(1)
	w, cookie, _ := tr.passVisit("http://shop.example/tickets?a=1&waiting_room_pass="+pass+"&b=2", "", "")
	if v := viewOf(t, w); v.Status != "queued" || v.Position != 1 || v.Pass != "" {
		t.Fatalf("a pass holder behind 3 waiters: %+v, want queued at 1", v)
	}
	if !tr.tokenOf(cookie).Pass {
		t.Fatal("the pass holder's cookie does not hold the pass")
	}
	w, _, _ = tr.passVisit("http://shop.example/tickets?waiting_room_pass="+pass, "", "")
	if v := viewOf(t, w); v.Status != "queued" || v.Position != 5 || v.Pass != "invalid" {
		t.Fatalf("the same pass of 1 use again: %+v, want queued at the back (5) with pass invalid", v)
	}
	// The slot frees: the pass holder goes in first, and the upstream sees no pass.
	if err := tr.h.room.RemoveVisitor(context.Background(), tr.tokenOf(admitted).ID.String()); err != nil {
		t.Fatal(err)
	}
	tr.clock.Advance(7 * time.Second)
	tr.step()
	w, cookie, seen := tr.passVisit("http://shop.example/tickets?a=1&waiting_room_pass="+pass+"&b=2", pass, cookie)
	if seen == nil {
		t.Fatalf("the pass holder was not let in first: %d %q", w.Code, w.Body.String())
	}
	if seen.URL.RawQuery != "a=1&b=2" || !strings.HasSuffix(seen.RequestURI, "/tickets?a=1&b=2") || seen.Header.Get(token.PassHeader) != "" {
		t.Fatalf("the upstream saw the pass: query %q, URI %q, header %q", seen.URL.RawQuery, seen.RequestURI, seen.Header.Get(token.PassHeader))
	}
	if tok := tr.tokenOf(cookie); !tok.Pass || tok.Waited != 7*time.Second {
		t.Fatalf("the admitted pass holder's cookie: %+v, want the pass and a wait of 7s", tok)
	}
}

// Passes that are forged, of another room, expired or oversized are ignored, never an
// error page, never admitting.
func TestInvalidPassesAreOrdinaryVisitors(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	tr.fill(1)
	now := tr.clock.Now()
	good := tr.mint(5)
	forged := []byte(good)
	forged[30] ^= 2
	other := token.NewKeyring(tr.h.Name+"x", [][]byte{[]byte("whatever")}).MintPass(token.NewPass(now.Add(time.Hour), 5))
	expired := tr.h.room.Keys().MintPass(token.NewPass(now.Add(-time.Second), 5))
	for i, c := range []struct{ what, pass string }{
		{"forged", string(forged)},
		{"of another room", other},
		{"expired", expired},
		{"oversized", strings.Repeat(good, 200)},
		{"garbage", "%%%"},
	} {
		w, _, seen := tr.passVisit("http://shop.example/?waiting_room_pass=x", c.pass, "")
		v := viewOf(t, w)
		if seen != nil || w.Code != tr.h.StatusCode || v.Status != "queued" || v.Position != 2+i || v.Pass != "invalid" {
			t.Errorf("a pass %s: %d %+v (upstream reached: %v), want queued at the back, pass invalid", c.what, w.Code, v, seen != nil)
		}
	}
}

// invite_only: only pass holders queue or enter; the others get the reject answer,
// saying so in every language; a waiter without a pass is taken out of the line.
func TestInviteOnly(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	_, waiters := tr.fill(1)
	if _, err := tr.h.room.Patch(context.Background(), []byte(`{"mode":"invite_only"}`)); err != nil {
		t.Fatal(err)
	}
	w, _, _ := tr.passVisit("http://shop.example/", "", "")
	if v := viewOf(t, w); w.Code != tr.h.RejectStatusCode || v.Status != "rejected" || v.Pass != "" {
		t.Fatalf("a newcomer without a pass in invite_only: %d %+v, want rejected", w.Code, v)
	}
	w, _, _ = tr.passVisit("http://shop.example/", "forged", "")
	if v := viewOf(t, w); v.Status != "rejected" || v.Pass != "invalid" {
		t.Fatalf("a newcomer with a bad pass: %+v, want rejected, pass invalid", v)
	}
	w, _, _ = tr.passVisit("http://shop.example/", "", waiters[0])
	if v := viewOf(t, w); v.Status != "rejected" || tr.waiting() != 0 {
		t.Fatalf("a waiter without a pass: %+v with %d waiting, want rejected and out of the line", v, tr.waiting())
	}
	w, cookie, _ := tr.passVisit("http://shop.example/", tr.mint(1), "")
	if v := viewOf(t, w); v.Status != "queued" || v.Position != 1 {
		t.Fatalf("a pass holder: %+v, want queued at 1", v)
	}
	if v := viewOf(t, func() *httptest.ResponseRecorder {
		w, _, _ := tr.passVisit("http://shop.example/", "", cookie)
		return w
	}()); v.Status != "queued" {
		t.Fatalf("the pass holder's next request, pass in the cookie only: %+v", v)
	}
	for _, lang := range []string{"en", "de", "es", "fr", "ja", "ko", "zh"} {
		r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
		r.Header.Set("Accept", "text/html")
		r.Header.Set("Accept-Language", lang)
		rec := httptest.NewRecorder()
		if err := tr.h.ServeHTTP(rec, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
			t.Fatal(err)
		}
		want := page.Messages(lang)["invite_heading"]
		if want == "" || !strings.Contains(rec.Body.String(), want) || strings.Contains(rec.Body.String(), page.Messages(lang)["rejected_heading"]) {
			t.Errorf("%s: the reject page does not say %q (by invitation only)", lang, want)
		}
	}
}
