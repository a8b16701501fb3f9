package waitingroom

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// PerIP are optional caps per client address, against floods from one machine. They
// are per instance (a fleet of n instances allows up to n times as much), kept in
// memory, and off by default: many real visitors can share one address behind a
// carrier-grade NAT, an office or a campus, so set them generously. Behind a proxy
// they count the address Caddy determined: set the server's trusted_proxies_strict
// too, or a client that forges the leftmost X-Forwarded-For is a new address on
// every request.
type PerIP struct {
	// MaxJoins is how many new visitors one address may start per JoinWindow. Over it,
	// the answer is 429 with Retry-After, and nothing is stored or counted. 0: no cap.
	MaxJoins int `json:"max_joins,omitempty"`

	// JoinWindow is the window of MaxJoins, at least 1s. Default: 1m.
	JoinWindow caddy.Duration `json:"join_window,omitempty"`

	// MaxConnections is how many waiting-page WebSockets one address may hold open at
	// once. Over it, the upgrade is refused with 429 and the page falls back to
	// polling. 0: no cap.
	MaxConnections int `json:"max_connections,omitempty"`
}

// clientAddr is the request's client address as Caddy determined it (after
// trusted_proxies), or the peer address.
func clientAddr(r *http.Request) string {
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && ip != "" {
		return ip
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// tooMany answers a request over a per-address cap: nothing is stored or counted. It
// is a Caddy error, not an answer of the room's, so handle_errors can restyle it; the
// Retry-After set here stays on the response (Caddy's error routes write to the same
// ResponseWriter), and without handle_errors Caddy answers the bare status.
func tooMany(w http.ResponseWriter, retryAfter time.Duration) error {
	hdr := w.Header()
	hdr.Set("Retry-After", strconv.Itoa(int(max(retryAfter, time.Second)/time.Second)))
	hdr.Set("Cache-Control", "no-store")
	return caddyhttp.Error(http.StatusTooManyRequests, errTooMany)
}

// errTooMany is the per-IP caps' error, {http.error.message} in handle_errors.
var errTooMany = errors.New("too many requests from this address")
