package waitingroom

import (
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp/encode"
)

// acceptsGzip reports whether the waiting page may go out gzipped to r: Caddy's own
// Accept-Encoding negotiation (the encode module's) ranks gzip first among gzip and
// identity. No header at all means identity: a client that names no coding is a
// script or a probe, not a browser, and may well not inflate it.
func acceptsGzip(r *http.Request) bool {
	for _, coding := range encode.AcceptedEncodings(r, []string{"gzip", "identity"}) {
		switch coding {
		case "gzip", "x-gzip":
			return true
		case "identity":
			return false
		}
	}
	return false
}
