package push

import (
	"net/http"
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
