package push

import (
	"net/http"
	"net/url"
	"strings"
)

// IsWaitingSocket reports whether r is the waiting page's WebSocket upgrade (and not,
// say, the site's own WebSocket, which the room passes on like any request): an
// HTTP/1.1 GET with Upgrade, or an extended CONNECT on HTTP/2 or HTTP/3 (stream.go).
func IsWaitingSocket(r *http.Request) bool {
	if !isExtendedConnect(r) && (r.Method != http.MethodGet || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket")) {
		return false
	}
	for _, line := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(line, ",") {
			if strings.TrimSpace(p) == Subprotocol {
				return true
			}
		}
	}
	return false
}

// CrossOrigin reports whether r comes from a page on another site: it carries an
// Origin whose host is not the request's Host. The upgrade (websocket.Accept, given no
// OriginPatterns) refuses such a request with 403; the room asks first, so that it
// refuses before it stores anything. A request without Origin (not a browser) is not
// cross-origin. TestCrossOriginAgreesWithTheUpgrade pins the two together.
func CrossOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || !strings.EqualFold(r.Host, u.Host)
}
