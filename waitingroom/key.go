package waitingroom

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

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
	return repl.ReplaceAll(h.Key, "")
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
