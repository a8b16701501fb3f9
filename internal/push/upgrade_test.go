package push

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/coder/websocket"
)

// The room refuses a cross-origin waiting socket before it stores anything, by its own
// reading of Origin (CrossOrigin); the upgrade refuses by the library's. They must
// agree on every Origin, or a request the room lets through would join and then be
// refused by the upgrade.
func TestCrossOriginAgreesWithTheUpgrade(t *testing.T) {
	for _, origin := range []string{
		"", "http://shop.example", "https://shop.example", "HTTP://SHOP.EXAMPLE", "http://Shop.Example",
		"http://shop.example:80", "http://shop.example:8080", "https://evil.example", "http://evil.example",
		"http://shop.example.evil.example", "http://evil.example/shop.example", "http://user@shop.example",
		"null", "file://", "shop.example", "//shop.example", "http://[::1", "%zz", " http://shop.example",
		"http://shop.example/path?q#f", "ws://shop.example",
	} {
		r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
		r.Header.Set("Connection", "Upgrade")
		r.Header.Set("Upgrade", "websocket")
		r.Header.Set("Sec-WebSocket-Version", "13")
		r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		r.Header.Set("Sec-WebSocket-Protocol", Subprotocol)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		// A recorder cannot be hijacked: a request the library accepts fails later, with
		// another status than 403.
		_, _ = websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}})
		refused := w.Code == http.StatusForbidden
		if got := page.CrossOrigin(r); got != refused {
			t.Errorf("Origin %q: CrossOrigin %v, the upgrade refused %v (%d %q)", origin, got, refused, w.Code, w.Body)
		}
	}
}

// The waiting socket is recognised however the browser opens it: an HTTP/1.1 upgrade,
// or an extended CONNECT on an HTTP/2 or HTTP/3 stream; always with the page's
// subprotocol, so a site's own WebSockets pass through on every protocol.
func TestIsWaitingSocketOnEveryHTTPVersion(t *testing.T) {
	for _, c := range []struct {
		name           string
		method         string
		major          int
		proto          string // r.Proto; HTTP/3 carries :protocol there
		upgrade, xprot string // the Upgrade field; :protocol as Go's HTTP/2 server keeps it
		subprotocol    string
		want           bool
	}{
		{"HTTP/1.1 upgrade", "GET", 1, "HTTP/1.1", "websocket", "", Subprotocol, true},
		{"HTTP/1.1 upgrade, the site's own", "GET", 1, "HTTP/1.1", "websocket", "", "chat", false},
		{"HTTP/1.1 POST", "POST", 1, "HTTP/1.1", "websocket", "", Subprotocol, false},
		{"HTTP/2 extended CONNECT", "CONNECT", 2, "HTTP/2.0", "", "websocket", Subprotocol, true},
		{"HTTP/2 extended CONNECT, the site's own", "CONNECT", 2, "HTTP/2.0", "", "websocket", "chat", false},
		{"HTTP/2 extended CONNECT, another protocol", "CONNECT", 2, "HTTP/2.0", "", "webtransport", Subprotocol, false},
		{"HTTP/2 GET", "GET", 2, "HTTP/2.0", "", "websocket", Subprotocol, false},
		{"HTTP/1.1 CONNECT", "CONNECT", 1, "HTTP/1.1", "", "websocket", Subprotocol, false},
		{"HTTP/3 extended CONNECT", "CONNECT", 3, "websocket", "", "", Subprotocol, true},
		{"HTTP/3 CONNECT", "CONNECT", 3, "HTTP/3.0", "", "", Subprotocol, false},
	} {
		r := httptest.NewRequest(c.method, "https://shop.example/tickets", nil)
		r.ProtoMajor, r.Proto = c.major, c.proto
		if c.upgrade != "" {
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", c.upgrade)
		}
		if c.xprot != "" {
			r.Header.Set(":protocol", c.xprot)
		}
		r.Header.Set("Sec-WebSocket-Protocol", c.subprotocol)
		if got := IsWaitingSocket(r); got != c.want {
			t.Errorf("%s: IsWaitingSocket %v, want %v", c.name, got, c.want)
		}
	}
}
