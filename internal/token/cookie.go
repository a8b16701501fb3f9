package token

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Cookie configures the room's visitor cookie. There is one cookie per room.
type Cookie struct {
	// Name of the cookie. Default: "waiting_room_" followed by the room name (letters,
	// digits, "-" and "_" kept, anything else replaced by "_").
	Name string `json:"name,omitempty"`

	// Domain attribute, to share the cookie with subdomains. Default: none (host only).
	Domain string `json:"domain,omitempty"`

	// Path attribute. Default: "/".
	Path string `json:"path,omitempty"`

	// SameSite attribute: "lax", "strict" or "none" ("none" needs Secure). Default: lax.
	SameSite string `json:"same_site,omitempty"`

	// Secure forces the Secure attribute on (true) or off (false). Default: set when the
	// request came over TLS.
	Secure *bool `json:"secure,omitempty"`

	// HTTPOnly keeps the cookie away from page scripts. Default: true.
	HTTPOnly *bool `json:"http_only,omitempty"`

	sameSite http.SameSite
	line     cookieLine
}

// cookieLine is the Set-Cookie header of the room's cookie cut around its value and
// expiry, made once by net/http (so its ordering and sanitizing hold) for minting a
// cookie per new visitor in one allocation.
type cookieLine struct {
	head string    // "name="
	mid  string    // "; Path=/; Domain=..." up to the expiry
	tail [2]string // the attributes after it, without and with Secure
	ok   bool      // net/http wrote the cookie the way the cut assumes
}

// SetDefaults fills in the defaults for the cookie of room and prepares its minting.
func (c *Cookie) SetDefaults(room string) {
	if c.Name == "" {
		c.Name = "waiting_room_" + CookieSafe(room)
	}
	if c.Path == "" {
		c.Path = "/"
	}
	if c.SameSite == "" {
		c.SameSite = "lax"
	}
	if c.HTTPOnly == nil {
		on := true
		c.HTTPOnly = &on
	}
	switch strings.ToLower(c.SameSite) {
	case "strict":
		c.sameSite = http.SameSiteStrictMode
	case "none":
		c.sameSite = http.SameSiteNoneMode
	default:
		c.sameSite = http.SameSiteLaxMode
	}
	c.line = c.cutLine()
}

// cutLine asks net/http for the cookie with a placeholder value, without and with
// the attributes that follow the expiry, and cuts the results around them.
func (c *Cookie) cutLine() cookieLine {
	const value = "v"
	base := (&http.Cookie{Name: c.Name, Value: value, Path: c.Path, Domain: c.Domain}).String()
	l := cookieLine{head: c.Name + "=", ok: true}
	if !strings.HasPrefix(base, l.head+value) {
		return cookieLine{}
	}
	l.mid = base[len(l.head)+len(value):]
	for i, secure := range []bool{false, true} {
		full := (&http.Cookie{Name: c.Name, Value: value, Path: c.Path, Domain: c.Domain,
			HttpOnly: *c.HTTPOnly, SameSite: c.sameSite, Secure: secure}).String()
		tail, ok := strings.CutPrefix(full, base)
		if !ok {
			return cookieLine{}
		}
		l.tail[i] = tail
	}
	return l
}

// Validate checks the configured name and attributes.
func (c *Cookie) Validate() error {
	if c.Name != "" && CookieSafe(c.Name) != c.Name {
		return fmt.Errorf("name %q: only letters, digits, '-' and '_' are allowed", c.Name)
	}
	switch strings.ToLower(c.SameSite) {
	case "", "lax", "strict":
	case "none":
		if c.Secure != nil && !*c.Secure {
			return fmt.Errorf("same_site none needs secure")
		}
	default:
		return fmt.Errorf("same_site must be lax, strict or none, got %q", c.SameSite)
	}
	return nil
}

// CookieSafe keeps the characters that need no quoting in a cookie name.
func CookieSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

// Value returns the room cookie's value in r, if any: the value Request.Cookie would
// give, without its allocations (see cookieValue).
func (c *Cookie) Value(r *http.Request) string {
	return cookieValue(r.Header["Cookie"], c.Name)
}

// Set writes the cookie carrying value onto w, living until expires (or deleting it
// when value is empty). value is a sealed token: letters, digits, - and _.
func (c *Cookie) Set(w http.ResponseWriter, r *http.Request, value []byte, expires time.Time) {
	secure := r.TLS != nil || c.sameSite == http.SameSiteNoneMode
	if c.Secure != nil {
		secure = *c.Secure
	}
	if len(value) > 0 && c.line.ok && expires.Year() >= 1601 { // net/http drops older expiries
		w.Header().Add("Set-Cookie", c.line.mint(value, expires, secure))
		return
	}
	ck := &http.Cookie{
		Name:     c.Name,
		Value:    string(value),
		Path:     c.Path,
		Domain:   c.Domain,
		HttpOnly: *c.HTTPOnly,
		SameSite: c.sameSite,
		Secure:   secure,
	}
	if len(value) == 0 {
		ck.MaxAge = -1
	} else {
		ck.Expires = expires
	}
	http.SetCookie(w, ck)
}

// mint is what net/http writes for the cookie with value and Expires: the same bytes
// in one allocation instead of four.
func (l *cookieLine) mint(value []byte, expires time.Time, secure bool) string {
	tail := l.tail[0]
	if secure {
		tail = l.tail[1]
	}
	var b strings.Builder
	b.Grow(len(l.head) + len(value) + len(l.mid) + len("; Expires=") + len(http.TimeFormat) + len(tail))
	b.WriteString(l.head)
	b.Write(value)
	b.WriteString(l.mid)
	b.WriteString("; Expires=")
	var at [len(http.TimeFormat)]byte
	b.Write(expires.UTC().AppendFormat(at[:0], http.TimeFormat))
	b.WriteString(tail)
	return b.String()
}
