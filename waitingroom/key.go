package waitingroom

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// `key <placeholder>`: who a request is for, so that every device of one person holds
// one place (internal/room/key.go, docs/people-and-devices.md).

// checkKey refuses a key that has no placeholder in it: a constant would make every
// visitor one, holding one place between them all.
func checkKey(key string) error {
	if !hasPlaceholder(key) {
		return fmt.Errorf("key %q has no placeholder: it would be the same for every request, putting every visitor on one place; use what tells people apart, such as {http.request.header.X-Account} or {http.auth.user.id}", key)
	}
	return nil
}

// hasPlaceholder reports whether s holds a placeholder: a {name} with something
// inside the braces.
func hasPlaceholder(s string) bool {
	for {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			return false
		}
		if open > 0 && s[open-1] == '\\' { // an escaped brace is text
			s = s[open+1:]
			continue
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			return false
		}
		if end > 1 {
			return true
		}
		s = s[open+end+1:]
	}
}

// parseKey reads `key <placeholder>`.
func parseKey(d *caddyfile.Dispenser) (string, error) {
	key, err := oneArg(d)
	if err != nil {
		return "", err
	}
	if err := checkKey(key); err != nil {
		return "", d.Err(err.Error())
	}
	return key, nil
}

// keyOf resolves the room's key for r, "" when the room has none or the placeholder
// is empty for r. It costs nothing when the room has no key.
func (h *Handler) keyOf(r *http.Request) string {
	if h.Key == "" {
		return ""
	}
	repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if !ok || repl == nil {
		return ""
	}
	key := repl.ReplaceAll(h.Key, "")
	h.keyCheck.see(r, key, h.logger, h.Name)
	return key
}

// keyCheck looks, on each keyed request, for what proves the room's key set up
// wrong, and warns of each such mistake once. Neither can be seen in the room's own
// configuration: what removes the client's header, or runs the authentication, is
// another handler, which the room does not see. A request shows it for certain:
//   - the header the key reads came more than once: a client's own copy was left
//     beside the trusted one (or the trusted one was added, not set), and the key
//     reads both, joined by a comma: a person of nobody's, or anyone's choosing;
//   - the key reads {http.auth.user.*}, resolved empty, on a request that carries
//     credentials (Authorization): the authentication runs after the room (at site
//     level, waiting_room is ordered before basic_auth and forward_auth), so every
//     visitor is only the cookie's.
type keyCheck struct {
	headers                  []string // the headers the key reads, canonical
	auth                     bool     // the key reads the authenticated user
	warnedHeader, warnedAuth atomic.Bool
}

// newKeyCheck reads what key reads.
func newKeyCheck(key string) *keyCheck {
	c := &keyCheck{auth: strings.Contains(key, "{http.auth.user.")}
	const prefix = "{http.request.header."
	for s := key; ; {
		i := strings.Index(s, prefix)
		if i < 0 {
			break
		}
		s = s[i+len(prefix):]
		end := strings.IndexByte(s, '}')
		if end < 0 {
			break
		}
		name := s[:end]
		if j := strings.IndexByte(name, ':'); j >= 0 { // a default value
			name = name[:j]
		}
		c.headers = append(c.headers, textproto.CanonicalMIMEHeaderKey(name))
		s = s[end:]
	}
	return c
}

// see warns, once each, of what r proves wrong of the key it resolved to key.
func (c *keyCheck) see(r *http.Request, key string, logger *zap.Logger, room string) {
	if c == nil {
		return
	}
	for _, name := range c.headers {
		if len(r.Header[name]) > 1 && !c.warnedHeader.Swap(true) {
			logger.Warn("the header the room's key reads came twice on one request: the client's own copy is not removed before the room, so a client can choose its key; remove it first (request_header -"+name+") and set the trusted value, never add it",
				zap.String("room", room), zap.String("header", name))
		}
	}
	if c.auth && key == "" && r.Header.Get("Authorization") != "" && !c.warnedAuth.Swap(true) {
		logger.Warn("the room's key reads the authenticated user, but was empty on a request with credentials: the authentication runs after the room, so no request is keyed; put both in a route, the authentication first, or order waiting_room after it",
			zap.String("room", room))
	}
}

// keyTooLong answers a request whose key is longer than the room takes: 400, saying
// so, as JSON or text. Nothing was stored or counted for it.
func keyTooLong(w http.ResponseWriter, r *http.Request, room string) error {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Vary", "Accept")
	if page.PrefersJSON(r.Header.Get("Accept")) {
		hdr.Set("Content-Type", "application/json")
		hdr.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		w.WriteHeader(http.StatusBadRequest)
		return json.NewEncoder(w).Encode(struct {
			Room        string `json:"room"`
			Error       string `json:"error"`
			MaxKeyBytes int    `json:"max_key_bytes"`
		}{room, "key_too_long", token.MaxKey})
	}
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	_, err := fmt.Fprintf(w, "The account this request is for is identified by a key longer than %d bytes, which this waiting room does not take.\n", token.MaxKey)
	return err
}
