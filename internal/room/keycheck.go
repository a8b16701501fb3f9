package room

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
)

// CheckKey refuses a key that has no placeholder in it: a constant would make every
// visitor one, holding one place between them all.
func CheckKey(key string) error {
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

// A KeyCheck looks, on each keyed request, for what proves the room's key set up
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
type KeyCheck struct {
	room                     string
	logger                   *zap.Logger
	headers                  []string // the headers the key reads, canonical
	auth                     bool     // the key reads the authenticated user
	warnedHeader, warnedAuth atomic.Bool
}

// NewKeyCheck reads what the key of room reads; it warns to logger.
func NewKeyCheck(room, key string, logger *zap.Logger) *KeyCheck {
	c := &KeyCheck{room: room, logger: logger, auth: strings.Contains(key, "{http.auth.user.")}
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

// See warns, once each, of what a request with header proves wrong of the key it
// resolved to key.
func (c *KeyCheck) See(header http.Header, key string) {
	if c == nil {
		return
	}
	for _, name := range c.headers {
		if len(header[name]) > 1 && !c.warnedHeader.Swap(true) {
			c.logger.Warn("the header the room's key reads came twice on one request: the client's own copy is not removed before the room, so a client can choose its key; remove it first (request_header -"+name+") and set the trusted value, never add it",
				zap.String("room", c.room), zap.String("header", name))
		}
	}
	if c.auth && key == "" && header.Get("Authorization") != "" && !c.warnedAuth.Swap(true) {
		c.logger.Warn("the room's key reads the authenticated user, but was empty on a request with credentials: the authentication runs after the room, so no request is keyed; put both in a route, the authentication first, or order waiting_room after it",
			zap.String("room", c.room))
	}
}
