package waitingroom

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// handoffAnswer is the JSON answer to a request for a code.
type handoffAnswer struct {
	Room           string `json:"room"`
	Status         string `json:"status"`
	HandoffURL     string `json:"handoff_url"`
	ExpiresSeconds int    `json:"expires_seconds"`
}

// askHandoff asks for a code for cookie's place as a JSON client does.
func (tr *testRoom) askHandoff(cookie string) handoffAnswer {
	tr.t.Helper()
	w, _, seen := tr.requestWith("http://shop.example/tickets?a=1", cookie, "Accept", "application/json", token.HandoffHeader, "new")
	if seen != nil {
		tr.t.Fatal("a request for a code went to the upstream")
	}
	var a handoffAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || a.HandoffURL == "" {
		tr.t.Fatalf("the answer to a request for a code: %d %q", w.Code, w.Body.String())
	}
	return a
}

// codeOf is the code in a hand-off link.
func codeOf(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get(token.HandoffParam)
}

// useCode opens a hand-off link as a JSON client with the cookie given ("" for a
// device with none).
func (tr *testRoom) useCode(code, cookie string) (*httptest.ResponseRecorder, string, *http.Request) {
	tr.t.Helper()
	return tr.requestWith("http://shop.example/tickets?a=1&"+token.HandoffParam+"="+url.QueryEscape(code), cookie, "Accept", "application/json")
}

// Codes that are forged, cut, oversized, of another room, of another secret, expired,
// used, empty or garbage make an ordinary new visitor told "handoff":"invalid": never
// an error page, never the place, never the upstream seeing the code.
func TestInvalidHandoffCodesAreOrdinaryVisitors(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	_, waiters := tr.fill(2)
	good := codeOf(t, tr.askHandoff(waiters[0]).HandoffURL)
	used := codeOf(t, tr.askHandoff(waiters[1]).HandoffURL)
	if w, _, _ := tr.useCode(used, ""); viewOf(t, w).Position != 2 {
		t.Fatalf("a good code did not move the place: %q", w.Body.String())
	}
	now := tr.clock.Now()
	id := tr.tokenOf(waiters[0]).ID
	forged := []byte(good)
	forged[20] ^= 1
	other := token.NewKeyring(tr.h.Name+"x", [][]byte{[]byte("whatever")}).MintHandoff(token.NewHandoff(id, now, now, false, false))
	stranger := token.NewKeyring(tr.h.Name, [][]byte{[]byte("not the room's")}).MintHandoff(token.NewHandoff(id, now, now, false, false))
	expired := tr.h.room.Keys().MintHandoff(token.NewHandoff(id, now, now.Add(-token.HandoffLife), false, false))
	gone := tr.h.room.Keys().MintHandoff(token.NewHandoff(queue.NewVisitorID(), now, now, false, false))
	cases := []struct{ what, code string }{
		{"forged", string(forged)},
		{"cut", good[:len(good)-1]},
		{"oversized", strings.Repeat(good, 100)},
		{"of another room", other},
		{"of another secret", stranger},
		{"expired", expired},
		{"used", used},
		{"for a place that is gone", gone},
		{"garbage", "%%%"},
		{"empty", ""},
		{"a pass", tr.mint(3)},
	}
	for i, c := range cases {
		w, cookie, seen := tr.useCode(c.code, "")
		if w.Code >= 500 && w.Code != tr.h.StatusCode {
			t.Fatalf("%s: an error answer %d %q", c.what, w.Code, w.Body.String())
		}
		if seen != nil {
			t.Fatalf("%s: the upstream was reached", c.what)
		}
		v := viewOf(t, w)
		if v.Status != "queued" || v.Handoff != "invalid" || v.Position != 3+i {
			t.Fatalf("%s: %+v, want a new visitor at the back (%d) told handoff invalid", c.what, v, 3+i)
		}
		if tok := tr.tokenOf(cookie); tok.ID == id {
			t.Fatalf("%s: the device was given the place", c.what)
		}
	}
	if v := tr.queued(waiters[0]); v.Position != 1 {
		t.Fatalf("the holder of the place after all that: %+v, want still at 1", v)
	}
}

// A code is asked for from the room's own page only: another site's page (its
// Origin, the browser's Sec-Fetch-Site, or else its Referer) is refused before anything is stored or
// minted, while a JSON client (neither header) and the page itself are answered.
func TestHandoffAskedCrossSiteIsRefused(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	_, waiters := tr.fill(1)
	for _, hs := range [][]string{
		{"Origin", "https://evil.example"},
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Origin", "https://evil.example", "Sec-Fetch-Site", "same-origin"},
		{"Referer", "https://evil.example/page"},
	} {
		w, _, _ := tr.requestWith("http://shop.example/tickets", waiters[0], append([]string{token.HandoffHeader, "new", "Accept", "application/json"}, hs...)...)
		if w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), token.HandoffParam) {
			t.Fatalf("asked with %v: %d %q, want 403 and no code", hs, w.Code, w.Body.String())
		}
	}
	if tr.waiting() != 1 {
		t.Fatalf("%d waiting after refused requests, want the one", tr.waiting())
	}
	w, _, _ := tr.requestWith("http://shop.example/tickets", waiters[0], token.HandoffHeader, "new", "Accept", "application/json",
		"Sec-Fetch-Site", "same-origin", "Origin", "http://shop.example")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), token.HandoffParam) {
		t.Fatalf("the page's own request: %d %q, want a code", w.Code, w.Body.String())
	}
}

// A code moves a waiter's place: the new device holds the same ticket at the same
// position, the old device's cookie is told the place moved (and is given nothing
// that holds it), the code is used once, the upstream never sees it, and the admin
// room object and the metric count it.
func TestHandoffMovesTheWaitersPlace(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	admitted, waiters := tr.fill(3)
	a := tr.askHandoff(waiters[1])
	if a.Status != "queued" || a.Room != tr.h.Name || a.ExpiresSeconds != int(token.HandoffLife/time.Second) {
		t.Fatalf("the answer to a request for a code: %+v", a)
	}
	if !strings.HasPrefix(a.HandoffURL, "http://shop.example/tickets?a=1&"+token.HandoffParam+"=") {
		t.Fatalf("the link %q is not the page's own address with the code", a.HandoffURL)
	}
	code := codeOf(t, a.HandoffURL)
	w, moved, seen := tr.useCode(code, "")
	if seen != nil {
		t.Fatal("the upstream saw the request that carried the code")
	}
	v := viewOf(t, w)
	if v.Status != "queued" || v.Position != 2 || v.Handoff != "" {
		t.Fatalf("the new device: %+v, want queued at 2", v)
	}
	if tr.tokenOf(moved).ID == tr.tokenOf(waiters[1]).ID {
		t.Fatal("the new device was given the old device's id: both would hold the place")
	}
	w, kept := tr.visit(waiters[1], "application/json")
	if v := viewOf(t, w); v.Status != "moved" || v.Position != 0 {
		t.Fatalf("the old device: %+v, want told the place moved", v)
	}
	if kept != waiters[1] {
		t.Fatal("the old device was given a new cookie")
	}
	if v := tr.queued(waiters[2]); v.Position != 3 {
		t.Fatalf("the waiter behind: %+v, want still at 3", v)
	}
	if w, _, _ := tr.useCode(code, ""); viewOf(t, w).Handoff != "invalid" {
		t.Fatalf("the code used again: %q, want invalid", w.Body.String())
	}
	if got := tr.info().Handoffs; got != 1 {
		t.Fatalf("the admin room object counts %d hand-offs, want 1", got)
	}
	// The line goes on with the new device in the old one's turn.
	if err := tr.h.room.RemoveVisitor(context.Background(), tr.tokenOf(admitted).ID.String()); err != nil {
		t.Fatal(err)
	}
	tr.step()
	tr.visit(waiters[0], "application/json")
	if err := tr.h.room.RemoveVisitor(context.Background(), tr.tokenOf(waiters[0]).ID.String()); err != nil {
		t.Fatal(err)
	}
	tr.step()
	if w, _ := tr.visit(moved, ""); w.Body.String() != "upstream" {
		t.Fatalf("the new device was not let in in its turn: %d %q", w.Code, w.Body.String())
	}
	if w, _ := tr.visit(waiters[1], ""); w.Body.String() == "upstream" {
		t.Fatal("the old device was let in too")
	}
}

// A code moves an admitted session: the new device is let in, the old device's
// cookie stops being honoured on this instance at once and is told the place moved.
func TestHandoffMovesTheSession(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	admitted, _ := tr.fill(1)
	a := tr.askHandoff(admitted)
	if a.Status != "admitted" {
		t.Fatalf("an admitted visitor's code: %+v", a)
	}
	w, moved, _ := tr.requestWith(a.HandoffURL, "")
	if w.Code != http.StatusSeeOther || strings.Contains(w.Header().Get("Location"), token.HandoffParam) {
		t.Fatalf("a browser opening the link: %d to %q, want sent to the address without the code", w.Code, w.Header().Get("Location"))
	}
	if w, _ := tr.visit(moved, ""); w.Body.String() != "upstream" {
		t.Fatalf("the new device was not let in: %d %q", w.Code, w.Body.String())
	}
	w, _ = tr.visit(admitted, "application/json")
	if w.Body.String() == "upstream" || viewOf(t, w).Status != "moved" {
		t.Fatalf("the old device: %d %q, want told the place moved", w.Code, w.Body.String())
	}
	if tr.waiting() != 1 {
		t.Fatalf("%d waiting, want the one waiter: nobody joined", tr.waiting())
	}
}

// A keyed visitor's place is not renamed: the new device gets a cookie for the same
// id, and the old device, the same person, keeps its place too.
func TestHandoffOfAKeyedPlaceKeepsTheID(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	_, waiters := tr.fill(2)
	tok := tr.tokenOf(waiters[0])
	now := tr.clock.Now()
	code := tr.h.room.Keys().MintHandoff(token.NewHandoff(tok.ID, tok.Since, now, false, true))
	w, cookie, _ := tr.useCode(code, "")
	if v := viewOf(t, w); v.Status != "queued" || v.Position != 1 {
		t.Fatalf("the new device of a keyed visitor: %+v, want queued at 1", v)
	}
	if tr.tokenOf(cookie).ID != tok.ID {
		t.Fatal("a keyed place was given another id")
	}
	if v := tr.queued(waiters[0]); v.Position != 1 {
		t.Fatalf("the keyed visitor's first device: %+v, want still at 1", v)
	}
	if w, _, _ := tr.useCode(code, ""); viewOf(t, w).Handoff != "invalid" {
		t.Fatal("a keyed code was used twice")
	}
}

// A code is taken out of the request before it goes on: a visitor let in at once
// with an invalid code reaches the upstream without it (a JSON client), and a
// browser is first sent to the address without it.
func TestHandoffCodeNeverReachesTheUpstream(t *testing.T) {
	tr := newTestRoom(t, 5)
	w, _, seen := tr.useCode("bogus", "")
	if seen == nil {
		t.Fatalf("a visitor to an empty room was not let in: %d %q", w.Code, w.Body.String())
	}
	if seen.URL.RawQuery != "a=1" || strings.Contains(seen.RequestURI, token.HandoffParam) {
		t.Fatalf("the upstream saw the code: query %q, URI %q", seen.URL.RawQuery, seen.RequestURI)
	}
	w, _, seen = tr.requestWith("http://shop.example/tickets?a=1&"+token.HandoffParam+"=bogus", "")
	if seen != nil || w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/tickets?a=1" {
		t.Fatalf("a browser with a code in the address: %d to %q (upstream reached: %v), want sent to /tickets?a=1",
			w.Code, w.Header().Get("Location"), seen != nil)
	}
}

// The old device's browser is shown the page that says the place moved, in its
// language, through the room's page renderer, and it carries nothing that polls,
// joins or rejoins.
func TestMovedPageInTheVisitorsLanguage(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	_, waiters := tr.fill(1)
	tr.useCode(codeOf(t, tr.askHandoff(waiters[0]).HandoffURL), "")
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
	r.Header.Set("Cookie", tr.h.Cookie.Name+"="+waiters[0])
	r.Header.Set("Accept", "text/html")
	r.Header.Set("Accept-Language", "de")
	w := httptest.NewRecorder()
	if err := tr.h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
		t.Fatal(err)
	}
	body := w.Body.String()
	if !strings.Contains(body, "Ihr Platz ist auf ein anderes Gerät gewechselt") {
		t.Fatalf("the old device's page (%d) does not say in German that the place moved:\n%s", w.Code, body)
	}
	for _, bad := range []string{"<script", "<button", "wr-rejoin"} {
		if strings.Contains(body, bad) {
			t.Fatalf("the old device's page has %q", bad)
		}
	}
}

// A device that holds a place of its own and opens a link for another gives its own
// up: it is one visitor, with one place, and nothing stands in line for nobody.
func TestHandoffTakerGivesUpItsOwnPlace(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	_, waiters := tr.fill(3)
	code := codeOf(t, tr.askHandoff(waiters[0]).HandoffURL)
	w, cookie, _ := tr.useCode(code, waiters[2])
	if v := viewOf(t, w); v.Status != "queued" || v.Position != 1 {
		t.Fatalf("the device at 3 opening the link of the place at 1: %+v, want queued at 1", v)
	}
	if tr.tokenOf(cookie).ID == tr.tokenOf(waiters[2]).ID {
		t.Fatal("the device kept its own id")
	}
	if n := tr.waiting(); n != 2 {
		t.Fatalf("%d waiting, want 2: the device's own place should be given up", n)
	}
	if v := tr.queued(waiters[1]); v.Position != 2 {
		t.Fatalf("the waiter between: %+v, want at 2", v)
	}
}
