package waitingroom

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// How a link reaches the room, as the browser or a client says it: from another
// site's page, or from the visitor's own hand (a scanned or pasted link, or a client
// that is not a browser).
var (
	fromOtherSites = []struct {
		what    string
		headers []string
	}{
		{"Sec-Fetch-Site cross-site", []string{"Sec-Fetch-Site", "cross-site"}},
		{"Sec-Fetch-Site same-site", []string{"Sec-Fetch-Site", "same-site"}},
		{"a Referer on another host", []string{"Referer", "https://evil.example/win"}},
		{"an Origin on another host", []string{"Origin", "https://evil.example"}},
	}
	fromOwnHand = []struct {
		what    string
		headers []string
	}{
		{"Sec-Fetch-Site none", []string{"Sec-Fetch-Site", "none"}},
		{"no Sec-Fetch-Site", nil},
		{"Sec-Fetch-Site same-origin", []string{"Sec-Fetch-Site", "same-origin", "Referer", "http://shop.example/tickets"}},
		{"a Referer on this host", []string{"Referer", "http://shop.example/tickets"}},
	}
)

// openLink opens a hand-off link with the cookie and headers given, as a JSON client.
func (tr *testRoom) openLink(code, cookie string, headers []string) (*httptest.ResponseRecorder, string, *http.Request) {
	tr.t.Helper()
	return tr.requestWith("http://shop.example/tickets?a=1&"+token.HandoffParam+"="+url.QueryEscape(code), cookie,
		append([]string{"Accept", "application/json"}, headers...)...)
}

// Another site can link a visitor to anyone's code. A device that holds a place of
// its own and follows such a link keeps its place and is told the link was refused;
// the code is not spent (its holder can still move it), and it never goes upstream.
func TestHandoffFromAnotherSiteKeepsAQueuedPlace(t *testing.T) {
	for _, c := range fromOtherSites {
		t.Run(c.what, func(t *testing.T) {
			tr := newRoomWith(t, func(h *Handler) {})
			_, waiters := tr.fill(3)
			code := codeOf(t, tr.askHandoff(waiters[0]).HandoffURL)
			w, cookie, seen := tr.openLink(code, waiters[2], c.headers)
			if seen != nil {
				t.Fatal("the upstream was reached")
			}
			v := viewOf(t, w)
			if v.Status != "queued" || v.Position != 3 || v.Handoff != "refused" {
				t.Fatalf("the device at 3 following another site's link: %+v, want still at 3, told refused", v)
			}
			if tr.tokenOf(cookie).ID != tr.tokenOf(waiters[2]).ID {
				t.Fatal("the device was given another place")
			}
			if v := tr.queued(waiters[0]); v.Status != "queued" || v.Position != 1 {
				t.Fatalf("the code's holder: %+v, want still at 1", v)
			}
			if n := tr.waiting(); n != 3 {
				t.Fatalf("%d waiting, want the 3", n)
			}
			w, moved, _ := tr.useCode(code, "")
			if v := viewOf(t, w); v.Position != 1 || v.Handoff != "" || tr.tokenOf(moved).ID == tr.tokenOf(waiters[0]).ID {
				t.Fatalf("the code opened afterwards by hand: %+v, want it to move the place at 1", v)
			}
		})
	}
}

// An admitted device following another site's link keeps its session, and the
// code stays unspent; a browser is sent to the address without the code.
func TestHandoffFromAnotherSiteKeepsASession(t *testing.T) {
	for _, c := range fromOtherSites {
		t.Run(c.what, func(t *testing.T) {
			tr := newRoomWith(t, func(h *Handler) {})
			admitted, waiters := tr.fill(1)
			code := codeOf(t, tr.askHandoff(waiters[0]).HandoffURL)
			w, cookie, seen := tr.openLink(code, admitted, c.headers)
			if seen == nil || strings.Contains(seen.URL.RawQuery, token.HandoffParam) {
				t.Fatalf("the admitted device: %d %q, want let in to the upstream without the code", w.Code, w.Body.String())
			}
			if tr.tokenOf(cookie).ID != tr.tokenOf(admitted).ID {
				t.Fatal("the admitted device was given another place")
			}
			w, _, seen = tr.requestWith("http://shop.example/tickets?a=1&"+token.HandoffParam+"="+url.QueryEscape(code), admitted,
				append([]string{"Accept", "text/html"}, c.headers...)...)
			if seen != nil || w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/tickets?a=1" {
				t.Fatalf("an admitted browser: %d to %q, want sent to /tickets?a=1", w.Code, w.Header().Get("Location"))
			}
			if w, _ := tr.visit(admitted, ""); w.Body.String() != "upstream" {
				t.Fatalf("the admitted device afterwards: %d %q, want still let in", w.Code, w.Body.String())
			}
			if v := tr.queued(waiters[0]); v.Status != "queued" || v.Position != 1 {
				t.Fatalf("the code's holder: %+v, want still at 1", v)
			}
			w, _, _ = tr.useCode(code, "")
			if v := viewOf(t, w); v.Position != 1 || v.Handoff != "" {
				t.Fatalf("the code opened afterwards by hand: %+v, want it to move the place at 1", v)
			}
		})
	}
}

// A scanned or pasted link (Sec-Fetch-Site none), a same-origin one and one from a
// client that says nothing take the code, even on a device with a place of its own.
func TestHandoffByHandMovesThePlace(t *testing.T) {
	for _, c := range fromOwnHand {
		t.Run(c.what, func(t *testing.T) {
			tr := newRoomWith(t, func(h *Handler) {})
			_, waiters := tr.fill(3)
			code := codeOf(t, tr.askHandoff(waiters[0]).HandoffURL)
			w, cookie, _ := tr.openLink(code, waiters[2], c.headers)
			if v := viewOf(t, w); v.Status != "queued" || v.Position != 1 || v.Handoff != "" {
				t.Fatalf("the device at 3 opening the link: %+v, want moved to 1", v)
			}
			if tr.tokenOf(cookie).ID == tr.tokenOf(waiters[2]).ID {
				t.Fatal("the device kept its own id")
			}
		})
	}
}

// A device with no place has nothing to lose: it takes a code from any link, another
// site's too. So does a device whose cookie's place is gone.
func TestHandoffFromAnotherSiteToADeviceWithoutAPlace(t *testing.T) {
	for _, c := range fromOtherSites {
		t.Run(c.what, func(t *testing.T) {
			tr := newRoomWith(t, func(h *Handler) {})
			_, waiters := tr.fill(3)
			code := codeOf(t, tr.askHandoff(waiters[0]).HandoffURL)
			w, _, _ := tr.openLink(code, "", c.headers)
			if v := viewOf(t, w); v.Status != "queued" || v.Position != 1 || v.Handoff != "" {
				t.Fatalf("a device with no cookie: %+v, want given the place at 1", v)
			}
			if err := tr.h.room.RemoveVisitor(context.Background(), tr.tokenOf(waiters[2]).ID.String()); err != nil {
				t.Fatal(err)
			}
			code = codeOf(t, tr.askHandoff(waiters[1]).HandoffURL)
			w, _, _ = tr.openLink(code, waiters[2], c.headers)
			if v := viewOf(t, w); v.Status != "queued" || v.Position != 2 || v.Handoff != "" {
				t.Fatalf("a device whose place is gone: %+v, want given the place at 2", v)
			}
		})
	}
}

// The page tells a browser that followed another site's link that it kept its place,
// and how to move a place on purpose.
func TestHandoffRefusedPage(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	_, waiters := tr.fill(2)
	code := codeOf(t, tr.askHandoff(waiters[0]).HandoffURL)
	w, _, _ := tr.requestWith("http://shop.example/tickets?"+token.HandoffParam+"="+url.QueryEscape(code), waiters[1],
		"Accept", "text/html", "Accept-Language", "fr", "Sec-Fetch-Site", "cross-site")
	if body := w.Body.String(); !strings.Contains(body, `id="wr-handoff-refused"`) || !strings.Contains(body, "autre site") {
		t.Fatalf("the page (%d) does not say in French that the link came from another site:\n%s", w.Code, body)
	}
}

// Another site's page can open the waiting socket at a hand-off link (a WebSocket
// carries cookies across sites). It is refused, 403, before the code is looked at:
// the code stays unspent, no cookie is set and the code's place stays its holder's,
// whether the device that opened it holds a place or not.
func TestCrossOriginSocketWithAHandoffCodeTakesNothing(t *testing.T) {
	for _, own := range []string{"no place", "a place"} {
		t.Run(own, func(t *testing.T) {
			tr := newRoomWith(t, func(h *Handler) {})
			_, waiters := tr.fill(2)
			code := codeOf(t, tr.askHandoff(waiters[0]).HandoffURL)
			cookie := ""
			if own == "a place" {
				cookie = waiters[1]
			}
			w, _, seen := tr.requestWith("http://shop.example/tickets?"+token.HandoffParam+"="+url.QueryEscape(code), cookie,
				"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
				"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol", "waiting-room.v1",
				"Origin", "https://evil.example")
			if seen != nil || w.Code != http.StatusForbidden {
				t.Fatalf("a cross-origin socket with a code: %d %q, want 403", w.Code, w.Body.String())
			}
			if set := w.Header().Values("Set-Cookie"); len(set) != 0 {
				t.Fatalf("a refused socket set %q", set)
			}
			if v := tr.queued(waiters[0]); v.Status != "queued" || v.Position != 1 {
				t.Fatalf("the code's holder: %+v, want still at 1", v)
			}
			if n := tr.waiting(); n != 2 {
				t.Fatalf("%d waiting, want the 2", n)
			}
			w, moved, _ := tr.useCode(code, "")
			if v := viewOf(t, w); v.Position != 1 || v.Handoff != "" || tr.tokenOf(moved).ID == tr.tokenOf(waiters[0]).ID {
				t.Fatalf("the code opened afterwards by hand: %+v, want it to move the place at 1", v)
			}
		})
	}
}
