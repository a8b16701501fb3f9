package push

import (
	"net/http"
	"net/http/httptest"
	"testing"

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
		if got := CrossOrigin(r); got != refused {
			t.Errorf("Origin %q: CrossOrigin %v, the upgrade refused %v (%d %q)", origin, got, refused, w.Code, w.Body)
		}
	}
}
